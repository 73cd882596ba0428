//! `cx-model --socket PATH [options]`: serves one emulated ConnectX-5 on a vfio-user socket until
//! QEMU disconnects, then prints the commands the driver issued (with counts) and the account of
//! firmware pages.

use cx_model::device::{Device, DeviceConfig};
use cx_model::firmware::faults::Rule;
use cx_model::init_segment::FwVersion;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: cx-model --socket PATH [--fw-version X.Y.Z] [--ports N] [--guid-seed N]
                [--psid TEXT] [--init-delay-ms N] [--fault SPEC]... [--command-log FILE]
                [--command-trace FILE] [--control PATH]
                [--wire-listen PATH | --wire-connect PATH] [--fabric managed|self]
  --fault hang:<OPCODE>[:<count>]                        the command never completes
  --fault delay:<OPCODE>:<ms>[:<count>]                  the command completes only after ms milliseconds
  --fault status:<OPCODE>:<status>[:<syndrome>[:<count>]] the command fails with that status
  (<OPCODE> is a name such as QUERY_ISSI or a number; RUST_LOG=debug logs every register access)
  --control PATH: a unix socket taking line commands: port <n> up|down, health-error <synd> [fatal],
                  health-clear, remove, fault <spec>, status
  --wire-listen PATH / --wire-connect PATH: link this model's ports to a peer model's over a unix
                  socket (one side listens, the other connects); packets for LIDs that are not
                  on this device go to the peer
  --fabric managed: ports come up INIT with LID 0 and wait for a subnet manager's Sets (PortInfo,
                  P_KeyTable, GUIDInfo, SL-to-VL, VL arbitration); --fabric self (the default):
                  each port configures itself ACTIVE with a LID derived from the GUID seed";

struct Args {
    socket: PathBuf,
    config: DeviceConfig,
    faults: Vec<Rule>,
    command_log: Option<PathBuf>,
    command_trace: Option<PathBuf>,
    control: Option<PathBuf>,
    wire: Option<cx_model::wire::WireEnd>,
}

fn number(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("bad number {s:?}"))
}

fn parse_args() -> Result<Args, String> {
    let mut socket = None;
    let mut config = DeviceConfig::default();
    let mut faults = Vec::new();
    let mut command_log = None;
    let mut command_trace = None;
    let mut control = None;
    let mut wire = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--socket" => socket = Some(PathBuf::from(value()?)),
            "--fw-version" => {
                let v = value()?;
                config.firmware.fw =
                    FwVersion::parse(&v).ok_or_else(|| format!("bad firmware version {v:?}"))?;
            }
            "--ports" => {
                let n = number(&value()?)?;
                config.firmware.ports = u8::try_from(n)
                    .ok()
                    .filter(|p| (1..=2).contains(p))
                    .ok_or("--ports is 1 or 2")?;
            }
            "--guid-seed" => config.firmware.guid_seed = number(&value()?)?,
            "--fabric" => {
                config.firmware.managed = match value()?.as_str() {
                    "managed" => true,
                    "self" => false,
                    v => return Err(format!("--fabric {v:?}: managed or self")),
                }
            }
            "--psid" => config.firmware.psid = value()?,
            "--init-delay-ms" => config.init_delay = Duration::from_millis(number(&value()?)?),
            "--fault" => faults.push(Rule::parse(&value()?)?),
            "--command-log" => command_log = Some(PathBuf::from(value()?)),
            "--command-trace" => command_trace = Some(PathBuf::from(value()?)),
            "--control" => control = Some(PathBuf::from(value()?)),
            "--wire-listen" => wire = Some(cx_model::wire::WireEnd::Listen(value()?.into())),
            "--wire-connect" => wire = Some(cx_model::wire::WireEnd::Connect(value()?.into())),
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {a:?}\n{USAGE}")),
        }
    }
    Ok(Args {
        socket: socket.ok_or_else(|| format!("--socket is required\n{USAGE}"))?,
        config,
        faults,
        command_log,
        command_trace,
        control,
        wire,
    })
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cx-model: {e}");
            return ExitCode::from(2);
        }
    };
    let fw = &args.config.firmware;
    log::info!(
        "ConnectX-5 15b3:1017, firmware {}, {} InfiniBand port(s), GUID seed {:#x}, {} fault rule(s)",
        fw.fw,
        fw.ports,
        fw.guid_seed,
        args.faults.len()
    );
    let mut device = Device::new(args.config);
    for rule in args.faults {
        device.firmware.faults.add(rule);
    }
    let model = match cx_model::server::serve(&args.socket, device, args.control.as_deref(), args.wire) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cx-model: vfio-user server failed: {e:?}");
            return ExitCode::FAILURE;
        }
    };
    let dev = model.shared().device.lock().unwrap_or_else(|e| e.into_inner());
    let report = dev.commands().report();
    let pages = format!(
        "{}\ncx-model: most commands in flight at once: {}",
        dev.firmware.pages.report(),
        dev.max_in_flight()
    );
    eprintln!(
        "cx-model: commands issued ({} in all):\n{report}cx-model: {pages}",
        dev.commands().total()
    );
    if let Some(path) = args.command_log {
        if let Err(e) = std::fs::write(&path, format!("{report}{pages}\n")) {
            eprintln!("cx-model: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = args.command_trace {
        if let Err(e) = std::fs::write(&path, dev.commands().trace()) {
            eprintln!("cx-model: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
