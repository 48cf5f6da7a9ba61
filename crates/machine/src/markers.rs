//! Guest → host markers (docs/markers.md): phases, the workload's exit
//! status, and data channels.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::error::MachineError;

pub const OP_PHASE: u16 = 0;
pub const OP_EXIT: u16 = 1;
pub const OP_SEND: u16 = 2;
pub const MAX_LABEL: u64 = 256;
pub const MAX_CHUNK: u64 = 65536;
pub const MAX_CHANNEL_NAME: u64 = 64;
/// Limits on what the guest can make the host keep: beyond them markers
/// are dropped and counted as bad.
pub const MAX_PHASES: usize = 100_000;
pub const MAX_CHANNEL_BYTES: usize = 256 << 20;

/// A phase boundary: where every hart stood when the marker retired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Phase {
    pub label: String,
    /// Hart that executed the marker.
    pub hart: usize,
    /// That hart's cycle at the marker.
    pub cycle: u64,
    /// Cycle and instret of every hart at that moment.
    pub cycles: Vec<u64>,
    pub instret: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Channel {
    pub data: Vec<u8>,
    pub closed: bool,
}

#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct MarkerLog {
    pub phases: Vec<Phase>,
    /// From the EXIT marker (a0, as the signed value the agent passed).
    pub exit_status: Option<i64>,
    /// Channels by name; a BTreeMap so output order never depends on hashing.
    pub channels: BTreeMap<String, Channel>,
    /// Reserved ops seen (0x483..0x48f).
    pub unknown: u64,
    /// Markers whose arguments were too long or not mapped, or that
    /// exceeded [`MAX_PHASES`] / [`MAX_CHANNEL_BYTES`].
    pub bad: u64,
    channel_bytes: usize,
}

/// Reads guest virtual memory through the marking hart's translation.
pub trait GuestView {
    fn read_virt(&self, va: u64, buf: &mut [u8]) -> Result<(), ()>;
}

impl MarkerLog {
    /// Handle one marker call from `hart`. `cycles`/`instret` are every hart's counters.
    pub fn handle(
        &mut self,
        op: u16,
        args: [u64; 4],
        hart: usize,
        view: &dyn GuestView,
        cycles: Vec<u64>,
        instret: Vec<u64>,
    ) {
        let read = |va: u64, len: u64, max: u64| -> Option<Vec<u8>> {
            if len > max {
                return None;
            }
            if len == 0 {
                return Some(Vec::new()); // a close: no buffer to read
            }
            let mut buf = vec![0u8; len as usize];
            view.read_virt(va, &mut buf).ok().map(|_| buf)
        };
        match op {
            OP_PHASE => match read(args[0], args[1], MAX_LABEL) {
                Some(_) if self.phases.len() >= MAX_PHASES => self.bad += 1,
                Some(label) => self.phases.push(Phase {
                    label: String::from_utf8_lossy(&label).into_owned(),
                    hart,
                    cycle: cycles.get(hart).copied().unwrap_or(0),
                    cycles,
                    instret,
                }),
                None => self.bad += 1,
            },
            OP_EXIT => self.exit_status = Some(args[0] as i64),
            OP_SEND => {
                let name = read(args[2], args[3], MAX_CHANNEL_NAME);
                let data = read(args[0], args[1], MAX_CHUNK);
                match (name, data) {
                    (Some(_), Some(data))
                        if self.channel_bytes + data.len() > MAX_CHANNEL_BYTES =>
                    {
                        self.bad += 1
                    }
                    (Some(name), Some(data)) if !name.is_empty() => {
                        self.channel_bytes += data.len();
                        let ch = self
                            .channels
                            .entry(String::from_utf8_lossy(&name).into_owned())
                            .or_default();
                        if data.is_empty() {
                            ch.closed = true;
                        } else {
                            ch.data.extend_from_slice(&data);
                        }
                    }
                    _ => self.bad += 1,
                }
            }
            _ => self.unknown += 1,
        }
    }

    /// Write every channel to `dir/<name>`; names may contain `/` (as
    /// `maps/<pid>`) but no `..`, empty or absolute components.
    pub fn write_channels(&self, dir: &Path) -> Result<Vec<PathBuf>, MachineError> {
        let mut written = Vec::new();
        for (name, ch) in &self.channels {
            let rel = Path::new(name);
            let ok = !name.is_empty()
                && rel.components().all(|c| matches!(c, Component::Normal(_)))
                && !name.ends_with('/')
                && !name.contains("//");
            if !ok {
                return Err(MachineError::BadChannelName(name.clone()));
            }
            let path = dir.join(rel);
            let io = |source| MachineError::WriteOutput {
                path: path.clone(),
                source,
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&path, &ch.data).map_err(io)?;
            written.push(path);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guest memory: one mapped window at 0x1000.
    struct Mem(Vec<u8>);
    impl GuestView for Mem {
        fn read_virt(&self, va: u64, buf: &mut [u8]) -> Result<(), ()> {
            let off = va.checked_sub(0x1000).ok_or(())? as usize;
            let src = self.0.get(off..off + buf.len()).ok_or(())?;
            buf.copy_from_slice(src);
            Ok(())
        }
    }

    #[test]
    fn phases_exit_channels_and_bad_markers() {
        let mut mem = b"boot-donemaps/42line\n".to_vec();
        mem.resize(0x100, 0);
        let m = Mem(mem);
        let mut log = MarkerLog::default();
        log.handle(OP_PHASE, [0x1000, 9, 0, 0], 1, &m, vec![10, 20], vec![5, 6]);
        assert_eq!(log.phases[0].label, "boot-done");
        assert_eq!((log.phases[0].hart, log.phases[0].cycle), (1, 20));
        log.handle(OP_PHASE, [0x1000, 300, 0, 0], 0, &m, vec![0], vec![0]);
        log.handle(OP_PHASE, [0x9000, 4, 0, 0], 0, &m, vec![0], vec![0]);
        assert_eq!(log.bad, 2);
        log.handle(
            OP_SEND,
            [0x1000 + 16, 5, 0x1000 + 9, 7],
            0,
            &m,
            vec![],
            vec![],
        );
        log.handle(
            OP_SEND,
            [0x1000 + 16, 5, 0x1000 + 9, 7],
            0,
            &m,
            vec![],
            vec![],
        );
        log.handle(OP_SEND, [0, 0, 0x1000 + 9, 7], 0, &m, vec![], vec![]);
        let ch = &log.channels["maps/42"];
        assert_eq!(
            (ch.data.as_slice(), ch.closed),
            (&b"line\nline\n"[..], true)
        );
        log.handle(OP_EXIT, [(-3i64) as u64, 0, 0, 0], 0, &m, vec![], vec![]);
        assert_eq!(log.exit_status, Some(-3));
        log.handle(5, [0; 4], 0, &m, vec![], vec![]);
        assert_eq!(log.unknown, 1);

        let dir = std::env::temp_dir().join(format!("hs-markers-{}", std::process::id()));
        let files = log.write_channels(&dir).unwrap();
        assert_eq!(std::fs::read(&files[0]).unwrap(), b"line\nline\n");
        std::fs::remove_dir_all(&dir).unwrap();
        log.channels.insert("../evil".into(), Channel::default());
        assert!(matches!(
            log.write_channels(&dir),
            Err(MachineError::BadChannelName(_))
        ));
    }
}
