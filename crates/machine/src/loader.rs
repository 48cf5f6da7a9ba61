//! Boot images (raw binaries or ELF files) and where they go in RAM,
//! computed the way QEMU 7.2's `virt` board does:
//!
//! * firmware at the start of DRAM (ELF: at its own physical addresses);
//! * kernel at the firmware's end rounded up to 2 MiB (0x8020_0000 for
//!   OpenSBI), or at the start of DRAM with `-bios none`;
//! * initrd at kernel start + min(RAM / 2, 128 MiB);
//! * DTB 2 MiB-aligned just below min(end of RAM, 3 GiB).

use std::path::Path;
use std::sync::Arc;

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSymbol};

use crate::error::MachineError;
use crate::layout::*;

/// An image as given by the user: a name for messages and its bytes
/// (shared: a plan and a second machine's configuration refer to the
/// same bytes, where copying tens of megabytes each time showed in a
/// boot's start-up).
#[derive(Clone, Debug)]
pub struct BootFile {
    pub name: String,
    pub data: Arc<Vec<u8>>,
}

impl BootFile {
    /// Read `path`; `what` ("firmware", "kernel", "initrd") names it in errors.
    pub fn read(what: &'static str, path: &Path) -> Result<Self, MachineError> {
        let data = std::fs::read(path).map_err(|source| MachineError::Read {
            what,
            path: path.into(),
            source,
        })?;
        Ok(Self {
            name: path.display().to_string(),
            data: Arc::new(data),
        })
    }
    pub fn from_bytes(name: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            name: name.into(),
            data: Arc::new(data),
        }
    }
}

/// Bytes of a segment: a range of its image file's bytes, shared with the
/// file (reads as a `[u8]`).
#[derive(Clone, Default)]
pub struct SegmentBytes {
    file: Arc<Vec<u8>>,
    start: usize,
    len: usize,
}

impl SegmentBytes {
    /// `file[start..start + len]`; the range must lie within the file.
    fn of(file: &Arc<Vec<u8>>, start: usize, len: usize) -> Self {
        assert!(
            start + len <= file.len(),
            "a segment's range lies within its file"
        );
        SegmentBytes {
            file: file.clone(),
            start,
            len,
        }
    }
    /// All of `file`.
    fn whole(file: &Arc<Vec<u8>>) -> Self {
        SegmentBytes::of(file, 0, file.len())
    }
}

impl std::ops::Deref for SegmentBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.file[self.start..self.start + self.len]
    }
}

impl PartialEq for SegmentBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}
impl Eq for SegmentBytes {}

impl std::fmt::Debug for SegmentBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.len)
    }
}

/// One piece of an image to copy into RAM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub addr: u64,
    /// Bytes from the file, copied into RAM at `addr` (shared with the
    /// file, not a copy of it).
    pub data: SegmentBytes,
    /// Bytes reserved in memory (≥ data; the rest is zero).
    pub mem_size: u64,
}

/// Addresses of Spike's HTIF mailbox in a bare-metal ELF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HtifSymbols {
    pub tohost: u64,
    pub fromhost: Option<u64>,
}

/// A parsed image before placement.
#[derive(Clone, Debug)]
struct Parsed {
    name: String,
    /// ELF: segments at their physical addresses; raw: one segment at 0.
    segments: Vec<Segment>,
    entry: Option<u64>,
    is_elf: bool,
    /// A raw file with the RISC-V Linux `Image` header's magic.
    is_image: bool,
    htif: Option<HtifSymbols>,
}

impl Parsed {
    fn span(&self) -> (u64, u64) {
        let start = self.segments.iter().map(|s| s.addr).min().unwrap_or(0);
        let end = self
            .segments
            .iter()
            .map(|s| s.addr.saturating_add(s.mem_size))
            .max()
            .unwrap_or(0);
        (start, end)
    }
    /// The segments moved so the lowest starts at `to` (`None`: the move overflows).
    fn shifted(&self, to: u64, bytes: Bytes) -> Option<Vec<Segment>> {
        let (start, _) = self.span();
        self.segments
            .iter()
            .map(|s| Some(bytes.segment(to.checked_add(s.addr - start)?, s)))
            .collect()
    }
    fn in_place(&self, bytes: Bytes) -> Vec<Segment> {
        self.segments
            .iter()
            .map(|s| bytes.segment(s.addr, s))
            .collect()
    }
}

const RISCV_IMAGE_MAGIC2: &[u8; 4] = b"RSC\x05";

fn parse(what: &'static str, f: &BootFile) -> Result<Parsed, MachineError> {
    if f.data.is_empty() {
        return Err(MachineError::Empty {
            what,
            name: f.name.clone(),
        });
    }
    let bad = |reason: String| MachineError::BadImage {
        what,
        name: f.name.clone(),
        reason,
    };
    if f.data.starts_with(b"\x7fELF") {
        return parse_elf(&f.data)
            .map_err(bad)
            .map(|(segments, entry, htif)| Parsed {
                name: f.name.clone(),
                segments,
                entry: Some(entry),
                is_elf: true,
                is_image: false,
                htif,
            });
    }
    // A Linux RISC-V `Image` header says how much memory the kernel occupies
    // once running (text + data + bss), which can exceed the file.
    let mut mem_size = f.data.len() as u64;
    let is_image = f.data.len() >= 0x40 && &f.data[0x38..0x3c] == RISCV_IMAGE_MAGIC2;
    if is_image {
        let image_size = u64::from_le_bytes(f.data[0x10..0x18].try_into().expect("8 bytes"));
        if image_size < f.data.len() as u64 {
            return Err(bad(format!(
                "its Image header claims {image_size} bytes but the file has {} (truncated or corrupt header)",
                f.data.len()
            )));
        }
        mem_size = image_size;
    }
    Ok(Parsed {
        name: f.name.clone(),
        segments: vec![Segment {
            addr: 0,
            data: SegmentBytes::whole(&f.data),
            mem_size,
        }],
        entry: None,
        is_elf: false,
        is_image,
        htif: None,
    })
}

type ElfParts = (Vec<Segment>, u64, Option<HtifSymbols>);

fn parse_elf(bytes_of_file: &Arc<Vec<u8>>) -> Result<ElfParts, String> {
    let data: &[u8] = bytes_of_file;
    let file = ElfFile64::<Endianness>::parse(data)
        .map_err(|e| format!("not a valid 64-bit ELF file ({e})"))?;
    let e = file.endian();
    let hdr = file.elf_header();
    if hdr.e_machine(e) != elf::EM_RISCV {
        return Err(format!("ELF machine {} is not RISC-V", hdr.e_machine(e)));
    }
    let mut segments = Vec::new();
    for ph in file.elf_program_headers() {
        if ph.p_type(e) != elf::PT_LOAD || ph.p_memsz(e) == 0 {
            continue;
        }
        let bytes = ph
            .data(e, data)
            .map_err(|_| "a loadable segment lies beyond the end of the file".to_string())?;
        let (filesz, memsz) = (ph.p_filesz(e), ph.p_memsz(e));
        if filesz > memsz {
            return Err("a segment's file size exceeds its memory size".into());
        }
        // (the object crate hands back a subslice of `data`)
        let start = bytes.as_ptr() as usize - data.as_ptr() as usize;
        segments.push(Segment {
            addr: ph.p_paddr(e),
            data: SegmentBytes::of(bytes_of_file, start, bytes.len()),
            mem_size: memsz,
        });
    }
    if segments.is_empty() {
        return Err("it has no loadable segments".into());
    }
    let sym = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
    };
    let htif = sym("tohost").map(|tohost| HtifSymbols {
        tohost,
        fromhost: sym("fromhost"),
    });
    Ok((segments, hdr.e_entry(e), htif))
}

/// What the user asked to boot.
#[derive(Clone, Debug, Default)]
pub struct BootImages {
    /// `None` is `-bios none`: the kernel runs bare metal from its entry.
    pub firmware: Option<BootFile>,
    pub kernel: Option<BootFile>,
    pub initrd: Option<BootFile>,
}

/// Where everything goes; produced by [`plan`].
#[derive(Clone, Debug)]
pub struct BootPlan {
    pub segments: Vec<Segment>,
    /// First instruction of every hart.
    pub entry: u64,
    /// Kernel load address (`fw_dynamic_info.next_addr`), 0 without a kernel.
    pub kernel_start: u64,
    pub initrd: Option<(u64, u64)>,
    pub dtb_addr: u64,
    pub htif: Option<HtifSymbols>,
}

struct Region {
    name: String,
    start: u64,
    end: u64,
}

/// Whether a placement carries the images' bytes: trial placements (the
/// search for enough RAM) need only addresses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bytes {
    Copy,
    AddressesOnly,
}

impl Bytes {
    fn segment(self, addr: u64, s: &Segment) -> Segment {
        let data = if self == Bytes::Copy {
            s.data.clone()
        } else {
            SegmentBytes::default()
        };
        Segment {
            addr,
            data,
            mem_size: s.mem_size,
        }
    }
}

enum Problem {
    Fatal(MachineError),
    /// More RAM might fix it.
    Fit(MachineError),
}

/// An image whose segments span more than the address space once moved to `to`.
fn too_far(what: &'static str, p: &Parsed, to: u64, ram_end: u64) -> Problem {
    let (start, end) = p.span();
    Problem::Fatal(MachineError::OutsideRam {
        what,
        name: p.name.clone(),
        start: to,
        end: to.saturating_add(end - start),
        ram_start: DRAM_BASE,
        ram_end,
    })
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

fn place(
    fw: Option<&Parsed>,
    kernel: Option<&Parsed>,
    initrd: Option<&BootFile>,
    ram: u64,
    dtb_size: u64,
    bytes: Bytes,
) -> Result<BootPlan, Problem> {
    let ram_end = DRAM_BASE + ram;
    let mut segments = Vec::new();
    let mut regions: Vec<Region> = Vec::new();
    let mut add = |what: &'static str,
                   name: &str,
                   segs: Vec<Segment>,
                   regions: &mut Vec<Region>|
     -> Result<(), Problem> {
        for s in &segs {
            let end = s.addr.saturating_add(s.mem_size);
            let outside = MachineError::OutsideRam {
                what,
                name: name.into(),
                start: s.addr,
                end,
                ram_start: DRAM_BASE,
                ram_end,
            };
            if s.addr < DRAM_BASE || end == u64::MAX {
                return Err(Problem::Fatal(outside));
            }
            if end > ram_end {
                return Err(Problem::Fit(outside));
            }
            regions.push(Region {
                name: format!("{what} {name}"),
                start: s.addr,
                end,
            });
        }
        segments.extend(segs);
        Ok(())
    };

    let (entry, kernel_start, htif) = match fw {
        Some(fw) => {
            let segs = if fw.is_elf {
                Some(fw.in_place(bytes))
            } else {
                fw.shifted(DRAM_BASE, bytes)
            };
            add(
                "firmware",
                &fw.name,
                segs.ok_or_else(|| too_far("firmware", fw, DRAM_BASE, ram_end))?,
                &mut regions,
            )?;
            let fw_end = regions.iter().map(|r| r.end).max().unwrap_or(DRAM_BASE);
            let entry = if fw.is_elf {
                fw.entry.unwrap_or(DRAM_BASE)
            } else {
                DRAM_BASE
            };
            let mut kstart = 0;
            if let Some(k) = kernel {
                if !k.is_elf && !k.is_image {
                    // Firmware hands the kernel over as Linux boots one; a
                    // file that is neither would run as random code.
                    return Err(Problem::Fatal(MachineError::BadImage {
                        what: "kernel",
                        name: k.name.clone(),
                        reason: "it is neither an ELF file nor a RISC-V Linux Image (no `RSC\\x05` magic at offset 0x38); a raw bare-metal program runs with --bios none".into(),
                    }));
                }
                let (kmin, kmax) = k.span();
                let in_ram = k.is_elf && kmin >= DRAM_BASE && kmax <= ram_end;
                kstart = if in_ram {
                    kmin
                } else {
                    align_up(fw_end, KERNEL_ALIGN)
                };
                let segs = if in_ram {
                    Some(k.in_place(bytes))
                } else {
                    k.shifted(kstart, bytes)
                };
                add(
                    "kernel",
                    &k.name,
                    segs.ok_or_else(|| too_far("kernel", k, kstart, ram_end))?,
                    &mut regions,
                )?;
            }
            (entry, kstart, fw.htif)
        }
        None => {
            let k = kernel.ok_or(Problem::Fatal(MachineError::NothingToRun))?;
            // Bare metal: an ELF goes exactly where it was linked.
            let segs = if k.is_elf {
                Some(k.in_place(bytes))
            } else {
                k.shifted(DRAM_BASE, bytes)
            };
            add(
                "kernel",
                &k.name,
                segs.ok_or_else(|| too_far("kernel", k, DRAM_BASE, ram_end))?,
                &mut regions,
            )?;
            let start = if k.is_elf { k.span().0 } else { DRAM_BASE };
            (k.entry.unwrap_or(DRAM_BASE), start, k.htif)
        }
    };

    let mut initrd_range = None;
    if let Some(rd) = initrd {
        if kernel.is_none() {
            return Err(Problem::Fatal(MachineError::InitrdWithoutKernel));
        }
        let start = kernel_start + (ram / 2).min(INITRD_MAX_OFFSET);
        let len = rd.data.len() as u64;
        let end = start.saturating_add(len);
        let data = if bytes == Bytes::Copy {
            SegmentBytes::whole(&rd.data)
        } else {
            SegmentBytes::default()
        };
        add(
            "initrd",
            &rd.name,
            vec![Segment {
                addr: start,
                data,
                mem_size: len,
            }],
            &mut regions,
        )?;
        initrd_range = Some((start, end));
    }

    let top = if DRAM_BASE < FDT_LIMIT {
        ram_end.min(FDT_LIMIT)
    } else {
        ram_end
    };
    let dtb_addr = top
        .checked_sub(dtb_size)
        .map(|a| a / FDT_ALIGN * FDT_ALIGN)
        .unwrap_or(0);
    if dtb_addr < DRAM_BASE {
        return Err(Problem::Fit(MachineError::OutsideRam {
            what: "device tree",
            name: "blob".into(),
            start: dtb_addr,
            end: dtb_addr + dtb_size,
            ram_start: DRAM_BASE,
            ram_end,
        }));
    }
    regions.push(Region {
        name: "device tree".into(),
        start: dtb_addr,
        end: dtb_addr + dtb_size,
    });

    regions.sort_by_key(|r| (r.start, r.end));
    for pair in regions.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.start < a.end {
            let err = MachineError::ImagesOverlap {
                a: a.name.clone(),
                a_start: a.start,
                a_end: a.end,
                b: b.name.clone(),
                b_start: b.start,
                b_end: b.end,
            };
            return Err(Problem::Fit(err));
        }
    }
    Ok(BootPlan {
        segments,
        entry,
        kernel_start,
        initrd: initrd_range,
        dtb_addr,
        htif,
    })
}

/// Place `images` in `ram` bytes of DRAM, leaving `dtb_size` bytes for the
/// device tree. When the images do not fit, the error says how much RAM
/// would be enough.
pub fn plan(images: &BootImages, ram: u64, dtb_size: u64) -> Result<BootPlan, MachineError> {
    let fw = images
        .firmware
        .as_ref()
        .map(|f| parse("firmware", f))
        .transpose()?;
    let kernel = images
        .kernel
        .as_ref()
        .map(|f| parse("kernel", f))
        .transpose()?;
    if let Some(rd) = &images.initrd {
        if rd.data.is_empty() {
            return Err(MachineError::Empty {
                what: "initrd",
                name: rd.name.clone(),
            });
        }
    }
    match place(
        fw.as_ref(),
        kernel.as_ref(),
        images.initrd.as_ref(),
        ram,
        dtb_size,
        Bytes::Copy,
    ) {
        Ok(p) => Ok(p),
        Err(Problem::Fatal(e)) => Err(e),
        Err(Problem::Fit(e)) => {
            const MIB: u64 = 1 << 20;
            let mut try_ram = align_up(ram + 1, MIB);
            while try_ram <= MAX_RAM {
                if place(
                    fw.as_ref(),
                    kernel.as_ref(),
                    images.initrd.as_ref(),
                    try_ram,
                    dtb_size,
                    Bytes::AddressesOnly,
                )
                .is_ok()
                {
                    let what = match (&images.firmware, &images.kernel, &images.initrd) {
                        (_, _, Some(_)) => "the firmware, kernel, initrd and device tree",
                        (_, Some(_), None) => "the firmware, kernel and device tree",
                        _ => "the firmware and device tree",
                    };
                    return Err(MachineError::RamTooSmall {
                        have_bytes: ram,
                        need_mib: try_ram / MIB,
                        what: what.into(),
                    });
                }
                try_ram += MIB;
            }
            Err(e)
        }
    }
}

/// QEMU's `fw_dynamic_info` (OpenSBI `fw_dynamic`), version 2, 64-bit.
pub fn fw_dynamic_info(next_addr: u64, boot_hart: u64) -> Vec<u8> {
    const MAGIC: u64 = 0x4942_534f; // "OSBI"
    const VERSION: u64 = 2;
    const NEXT_MODE_S: u64 = 1;
    [MAGIC, VERSION, next_addr, NEXT_MODE_S, 0, boot_hart]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn raw(name: &str, len: usize) -> BootFile {
        BootFile::from_bytes(name, vec![0x13; len])
    }

    /// A Linux `Image` as firmware boots it: the header's magic at 0x38 and
    /// an image size no larger than the file.
    fn linux_image(name: &str, len: usize) -> BootFile {
        let mut v = vec![0x13; len];
        v[0x10..0x18].copy_from_slice(&(len as u64).to_le_bytes());
        v[0x38..0x3c].copy_from_slice(RISCV_IMAGE_MAGIC2);
        BootFile::from_bytes(name, v)
    }

    #[test]
    fn qemu_virt_placement() {
        let images = BootImages {
            firmware: Some(raw("fw_jump.bin", 270_000)),
            kernel: Some(linux_image("Image", 20 * MIB as usize)),
            initrd: Some(raw("initrd", 3 * MIB as usize)),
        };
        let p = plan(&images, 512 * MIB, 0x2000).unwrap();
        assert_eq!(p.entry, 0x8000_0000);
        assert_eq!(p.kernel_start, 0x8020_0000);
        assert_eq!(
            p.initrd,
            Some((0x8020_0000 + 128 * MIB, 0x8020_0000 + 128 * MIB + 3 * MIB))
        );
        // QEMU 7.2: align_down(min(ram_end, 3 GiB) - size, 2 MiB).
        assert_eq!(p.dtb_addr, 0x9fe0_0000);
        let p = plan(&images, 128 * MIB, 0x2000).unwrap();
        assert_eq!(
            p.initrd.unwrap().0,
            0x8020_0000 + 64 * MIB,
            "RAM/2 below 256 MiB"
        );
        assert_eq!(p.dtb_addr, 0x87e0_0000);
        let p = plan(&images, 4096 * MIB, 0x2000).unwrap();
        assert_eq!(p.dtb_addr, 0xbfe0_0000, "DTB stays below 3 GiB");
    }

    #[test]
    fn too_little_ram_says_how_much_is_needed() {
        let images = BootImages {
            firmware: Some(raw("fw_jump.bin", 270_000)),
            kernel: Some(linux_image("Image", 40 * MIB as usize)),
            initrd: Some(raw("initrd", 10 * MIB as usize)),
        };
        let err = plan(&images, 64 * MIB, 0x2000).unwrap_err();
        match err {
            MachineError::RamTooSmall {
                have_bytes: 0x400_0000,
                need_mib,
                ..
            } => {
                assert!(plan(&images, need_mib * MIB, 0x2000).is_ok());
                assert!(plan(&images, (need_mib - 1) * MIB, 0x2000).is_err());
            }
            e => panic!("unexpected {e}"),
        }
    }

    #[test]
    fn image_header_size_counts() {
        let mut img = vec![0u8; 0x1000];
        img[0x10..0x18].copy_from_slice(&(8 * MIB).to_le_bytes());
        img[0x38..0x3c].copy_from_slice(b"RSC\x05");
        let images = BootImages {
            firmware: Some(raw("fw", 0x1000)),
            kernel: Some(BootFile::from_bytes("Image", img.clone())),
            initrd: Some(raw("initrd", 0x1000)),
        };
        // 12 MiB RAM: initrd at kernel + 6 MiB would land inside the kernel's 8 MiB.
        assert!(matches!(
            plan(&images, 12 * MIB, 0x1000),
            Err(MachineError::RamTooSmall { .. })
        ));
        img[0x10..0x18].copy_from_slice(&16u64.to_le_bytes());
        let images = BootImages {
            kernel: Some(BootFile::from_bytes("Image", img)),
            ..images
        };
        let err = plan(&images, 512 * MIB, 0x1000).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("kernel file Image is not a usable RISC-V image"),
            "{err}"
        );
    }

    #[test]
    fn empty_and_missing_files_are_named() {
        let images = BootImages {
            firmware: Some(raw("fw.bin", 0)),
            kernel: None,
            initrd: None,
        };
        assert_eq!(
            plan(&images, 64 * MIB, 0x1000).unwrap_err().to_string(),
            "firmware file fw.bin is empty"
        );
        let err = BootFile::read("kernel", Path::new("/nonexistent/Image")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read kernel file /nonexistent/Image:"),
            "{err}"
        );
        let images = BootImages {
            firmware: None,
            kernel: None,
            initrd: None,
        };
        assert!(matches!(
            plan(&images, 64 * MIB, 0x1000),
            Err(MachineError::NothingToRun)
        ));
        let images = BootImages {
            firmware: Some(raw("fw", 16)),
            kernel: None,
            initrd: Some(raw("rd", 16)),
        };
        assert!(matches!(
            plan(&images, 64 * MIB, 0x1000),
            Err(MachineError::InitrdWithoutKernel)
        ));
        let corrupt = BootFile::from_bytes("prog.elf", b"\x7fELF\x02\x01\x01garbage".to_vec());
        let images = BootImages {
            firmware: None,
            kernel: Some(corrupt),
            initrd: None,
        };
        let err = plan(&images, 64 * MIB, 0x1000).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "kernel file prog.elf is not a usable RISC-V image: not a valid 64-bit ELF"
            ),
            "{err}"
        );
    }

    #[test]
    fn overlap_more_ram_cannot_fix_is_reported_without_copying() {
        // A kernel whose Image header claims more than the 128 MiB initrd
        // offset: the initrd lands inside it whatever the RAM size, so the
        // search for enough RAM runs to the end and must stay cheap.
        let mut img = vec![0u8; 32 * MIB as usize];
        img[0x10..0x18].copy_from_slice(&(200 * MIB).to_le_bytes());
        img[0x38..0x3c].copy_from_slice(b"RSC\x05");
        let images = BootImages {
            firmware: Some(raw("fw_jump.bin", 270_000)),
            kernel: Some(BootFile::from_bytes("Image", img)),
            initrd: Some(raw("initrd", 8 * MIB as usize)),
        };
        let started = std::time::Instant::now();
        let err = plan(&images, 512 * MIB, 0x2000).unwrap_err();
        assert!(matches!(err, MachineError::ImagesOverlap { .. }), "{err}");
        assert!(
            err.to_string().contains("kernel Image") && err.to_string().contains("initrd initrd"),
            "{err}"
        );
        // Copying 40 MiB per trial took minutes; address-only trials take milliseconds.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn segments_spanning_the_address_space_are_refused() {
        let seg = |addr| Segment {
            addr,
            data: SegmentBytes::whole(&Arc::new(vec![0x13; 16])),
            mem_size: 0x1000,
        };
        let kernel = Parsed {
            name: "wide.elf".into(),
            segments: vec![seg(0x8000_0000), seg(u64::MAX - 0xfff)],
            entry: Some(0x8000_0000),
            is_elf: true,
            is_image: false,
            htif: None,
        };
        let fw = parse("firmware", &raw("fw_jump.bin", 4096)).unwrap();
        match place(
            Some(&fw),
            Some(&kernel),
            None,
            512 * MIB,
            0x1000,
            Bytes::Copy,
        ) {
            Err(Problem::Fatal(MachineError::OutsideRam { what: "kernel", .. })) => {}
            Err(Problem::Fatal(e) | Problem::Fit(e)) => panic!("unexpected {e}"),
            Ok(p) => panic!(
                "placed at {:#x?}",
                p.segments.iter().map(|s| s.addr).collect::<Vec<_>>()
            ),
        }
    }

    #[test]
    fn fw_dynamic_info_layout() {
        let b = fw_dynamic_info(0x8020_0000, 0);
        assert_eq!(b.len(), 48);
        assert_eq!(&b[0..8], &0x4942_534fu64.to_le_bytes());
        assert_eq!(&b[8..16], &2u64.to_le_bytes());
        assert_eq!(&b[16..24], &0x8020_0000u64.to_le_bytes());
        assert_eq!(&b[24..32], &1u64.to_le_bytes());
    }
}
