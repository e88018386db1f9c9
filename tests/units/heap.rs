//! `crates/web/src/heap.rs`
#![cfg(all(target_os = "linux", target_env = "gnu"))]

/// Pages freed in the middle of an arena stay resident until a trim
/// gives them back: a thread's arena is filled, every other block
/// freed (so nothing is at the top for `free` to release), and the
/// trim releases some.
#[test]
fn a_trim_releases_pages_freed_inside_an_arena() {
    std::thread::spawn(|| {
        let mut blocks: Vec<Vec<u8>> = (0..16_384).map(|i| vec![i as u8; 2048]).collect();
        for (i, b) in blocks.iter_mut().enumerate() {
            if i % 64 != 0 {
                *b = Vec::new();
            }
        }
        assert!(stablerail::heap::trim(), "malloc_trim released nothing");
        drop(blocks);
    })
    .join()
    .unwrap();
}
