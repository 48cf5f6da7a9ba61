//! The image loaders: firmware and kernel as ELF, RISC-V `Image` or raw
//! bytes, an initrd, any RAM size and device-tree size. A plan that is
//! accepted must keep every byte inside RAM without overlaps; a refusal is
//! one error naming the image.

use hs_machine::layout::DRAM_BASE;
use hs_machine::loader::plan;
use hs_machine::{BootFile, BootImages};

use crate::Input;

const RAM_SIZES: [u64; 6] = [64 << 10, 1 << 20, 16 << 20, 128 << 20, 512 << 20, 3 << 30];

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let which = input.u8();
    let ram = RAM_SIZES[(which & 7) as usize % RAM_SIZES.len()];
    let dtb_size = u64::from(input.u16()) * 16;
    let firmware_len = input.u16() as usize;
    let firmware = input.bytes(firmware_len).to_vec();
    let initrd_len = input.u16() as usize;
    let initrd = input.bytes(initrd_len).to_vec();
    // The kernel is the rest: the part most worth mutating.
    let kernel = input.bytes(usize::MAX).to_vec();
    let images = BootImages {
        firmware: (which & 0x08 != 0).then(|| BootFile::from_bytes("firmware", firmware)),
        kernel: (which & 0x10 != 0).then(|| BootFile::from_bytes("kernel", kernel)),
        initrd: (which & 0x20 != 0).then(|| BootFile::from_bytes("initrd", initrd)),
    };
    let end = DRAM_BASE + ram;
    match plan(&images, ram, dtb_size) {
        Ok(p) => {
            let mut spans: Vec<(u64, u64)> = Vec::new();
            for s in &p.segments {
                assert!(
                    s.data.len() as u64 <= s.mem_size,
                    "a segment copies more than it reserves"
                );
                let stop = s.addr.checked_add(s.mem_size).expect("a segment wraps");
                assert!(
                    s.addr >= DRAM_BASE && stop <= end,
                    "segment {:#x}..{stop:#x} outside RAM",
                    s.addr
                );
                spans.push((s.addr, stop));
            }
            // The initrd is one of the segments; its range must be too.
            if let Some((a, b)) = p.initrd {
                assert!(
                    p.segments
                        .iter()
                        .any(|s| s.addr == a && s.addr + s.mem_size == b),
                    "initrd {a:#x}..{b:#x} is not a placed segment"
                );
            }
            assert!(
                p.dtb_addr >= DRAM_BASE && p.dtb_addr + dtb_size <= end,
                "device tree outside RAM"
            );
            spans.push((p.dtb_addr, p.dtb_addr + dtb_size));
            spans.retain(|(a, b)| a < b);
            spans.sort();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "placed images overlap: {:x?}", spans);
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
