//! The wire between two models: a unix stream socket carrying packets for LIDs that are not on
//! this device. One model listens (`--wire-listen PATH`), the other connects
//! (`--wire-connect PATH`, retrying until the listener is there). Each packet is a frame: a
//! 32-bit big-endian length, then the encoded packet. A dropped link is re-established the same
//! way; packets sent while it is down are lost, as on a cable pulled out.

use crate::firmware::datapath::Packet;
use log::{info, warn};
use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// Largest frame accepted (a message of up to 64 MiB and its header).
pub const MAX_FRAME: usize = 64 << 20;

/// Which end of the wire this model is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireEnd {
    /// Listen on the path and take one peer at a time.
    Listen(PathBuf),
    /// Connect to the path.
    Connect(PathBuf),
}

/// Writes one packet as a frame.
pub fn write_frame(w: &mut impl Write, p: &Packet) -> io::Result<()> {
    let body = p.encode();
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame)
}

/// Reads one frame; `Ok(None)` at a clean end of stream.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Packet>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_be_bytes(len) as usize;
    if n > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {n} bytes"),
        ));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body)?;
    Packet::decode(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

/// Keeps the wire up: (re)connects or accepts, hands each connected stream to `attach` (which
/// keeps a writer), then reads frames into `deliver` until the stream ends, and calls `detach`.
/// Returns when `deliver` says to stop.
pub fn run(
    end: WireEnd,
    mut attach: impl FnMut(UnixStream),
    mut detach: impl FnMut(),
    mut deliver: impl FnMut(Packet) -> bool,
) {
    let listener = match &end {
        WireEnd::Listen(path) => {
            let _ = std::fs::remove_file(path);
            match UnixListener::bind(path) {
                Ok(l) => {
                    info!("wire: listening on {}", path.display());
                    Some(l)
                }
                Err(e) => {
                    warn!("wire: cannot listen on {}: {e}", path.display());
                    return;
                }
            }
        }
        WireEnd::Connect(_) => None,
    };
    loop {
        let stream = match (&end, &listener) {
            (_, Some(l)) => match l.accept() {
                Ok((s, _)) => s,
                Err(e) => {
                    warn!("wire: accept failed: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            },
            (WireEnd::Connect(path), None) => match UnixStream::connect(path) {
                Ok(s) => s,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            },
            (WireEnd::Listen(_), None) => return,
        };
        let Ok(writer) = stream.try_clone() else {
            continue;
        };
        info!("wire: linked");
        attach(writer);
        let mut reader = io::BufReader::new(stream);
        loop {
            match read_frame(&mut reader) {
                Ok(Some(p)) => {
                    if !deliver(p) {
                        detach();
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    warn!("wire: {e}; dropping the link");
                    break;
                }
            }
        }
        info!("wire: link down");
        detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::datapath::packet::Body;

    #[test]
    fn frames_round_trip_and_oversized_frames_are_refused() {
        let p = Packet {
            slid: 1,
            dlid: 2,
            sqpn: 3,
            dqpn: 4,
            psn: 5,
            body: Body::ReadResponse(vec![7; 300]),
        };
        let mut buf = vec![];
        write_frame(&mut buf, &p).unwrap();
        write_frame(&mut buf, &p).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(p.clone()));
        assert_eq!(read_frame(&mut r).unwrap(), Some(p));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        let big = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert!(read_frame(&mut &big[..]).is_err());
        let mut garbage = 3u32.to_be_bytes().to_vec();
        garbage.extend_from_slice(&[1, 2, 3]);
        assert!(read_frame(&mut &garbage[..]).is_err());
    }

    #[test]
    fn two_ends_link_over_a_socket() {
        let dir = std::env::temp_dir().join(format!("cx-wire-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("wire.sock");
        let (tx, rx) = std::sync::mpsc::channel();
        let listen = WireEnd::Listen(path.clone());
        let t = std::thread::spawn(move || {
            run(
                listen,
                |_| {},
                || {},
                |p| {
                    let _ = tx.send(p);
                    false
                },
            )
        });
        let p = Packet {
            slid: 9,
            dlid: 10,
            sqpn: 11,
            dqpn: 12,
            psn: 13,
            body: Body::Ack,
        };
        let sent = p.clone();
        let c = std::thread::spawn(move || {
            run(
                WireEnd::Connect(path),
                move |mut w| {
                    let _ = write_frame(&mut w, &sent);
                },
                || {},
                |_| false,
            )
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), p);
        t.join().unwrap();
        drop(c);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
