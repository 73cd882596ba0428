//! `cx-model --socket PATH [--fw-version X.Y.Z] [--init-delay-ms N] [--command-log FILE]`
//!
//! Serves one emulated ConnectX-5 on a vfio-user socket until QEMU disconnects, then prints (and
//! optionally writes) the commands the driver issued, with counts.

use cx_model::device::{Device, DeviceConfig};
use cx_model::init_segment::FwVersion;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

struct Args {
    socket: PathBuf,
    config: DeviceConfig,
    command_log: Option<PathBuf>,
}

const USAGE: &str =
    "usage: cx-model --socket PATH [--fw-version X.Y.Z] [--init-delay-ms N] [--command-log FILE]";

fn parse_args() -> Result<Args, String> {
    let mut socket = None;
    let mut config = DeviceConfig::default();
    let mut command_log = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--socket" => socket = Some(PathBuf::from(value()?)),
            "--fw-version" => {
                let v = value()?;
                config.fw = FwVersion::parse(&v).ok_or_else(|| format!("bad firmware version {v:?}"))?;
            }
            "--init-delay-ms" => {
                let v = value()?;
                config.init_delay = Duration::from_millis(v.parse().map_err(|_| format!("bad delay {v:?}"))?);
            }
            "--command-log" => command_log = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {a:?}\n{USAGE}")),
        }
    }
    Ok(Args {
        socket: socket.ok_or_else(|| format!("--socket is required\n{USAGE}"))?,
        config,
        command_log,
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
    log::info!("ConnectX-5 15b3:1017, firmware {}", args.config.fw);
    let model = match cx_model::server::serve(&args.socket, Device::new(args.config)) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cx-model: vfio-user server failed: {e:?}");
            return ExitCode::FAILURE;
        }
    };
    let report = model.device.commands().report();
    eprintln!(
        "cx-model: commands issued ({} in all):\n{report}",
        model.device.commands().total()
    );
    if let Some(path) = args.command_log {
        if let Err(e) = std::fs::write(&path, &report) {
            eprintln!("cx-model: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
