//! The kernel's BTF (captured from the guest at image build time): where a
//! task's pid, tgid and comm are. Any bytes parse or are refused; a layout
//! found in them has its fields inside `task_struct`.

pub fn run(data: &[u8]) {
    let Ok(btf) = hs_observe::symbols::Btf::parse("fuzzed btf", data.to_vec()) else {
        return;
    };
    let _ = btf.len();
    if let Some(id) = btf.struct_id("task_struct") {
        let _ = btf.members(id);
        let _ = btf.member(id, "comm");
    }
    let _ = hs_observe::symbols::TaskLayout::from_btf(&btf);
}
