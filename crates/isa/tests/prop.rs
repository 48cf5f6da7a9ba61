//! Random words never panic the decoder or the disassembler, and decoding is
//! consistent with the reported length.

use hs_isa::{decode, decode16, decode32, disasm, insn_len, Insn};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]
    #[test]
    fn any_word_decodes(w in any::<u32>(), pc in any::<u64>()) {
        let (insn, len) = decode(w);
        prop_assert_eq!(len, insn_len(w as u16));
        if len == 4 { prop_assert_eq!(insn, decode32(w)); } else { prop_assert_eq!(insn, decode16(w as u16)); }
        let text = disasm(&insn, pc);
        prop_assert!(!text.is_empty());
        if let Insn::Illegal(raw) = insn {
            prop_assert_eq!(raw, if len == 4 { w } else { w & 0xffff });
        }
    }
}
