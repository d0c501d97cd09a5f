use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;

use super::*;

const PAGE: usize = 4096;

fn leaf_spec(right: Pid, high: Option<&[u8]>) -> NodeSpec<'_> {
    NodeSpec { kind: NodeKind::Leaf, level: 0, lower: NONE, right, high, low: None }
}

fn leaf(pid: Pid, entries: &[(&[u8], &[u8])], right: Pid, high: Option<&[u8]>) -> Vec<u8> {
    leaf_in(pid, entries, right, None, high)
}

fn leaf_in(pid: Pid, entries: &[(&[u8], &[u8])], right: Pid, low: Option<&[u8]>, high: Option<&[u8]>) -> Vec<u8> {
    let mut page = blank_page(PAGE, pid);
    write_node(&mut page, pid, &NodeSpec { low, ..leaf_spec(right, high) }, entries).unwrap();
    Node::parse(&page, pid).unwrap().check().unwrap();
    page
}

fn inner(pid: Pid, level: u16, lower: Pid, entries: &[(&[u8], Pid)], right: Pid, high: Option<&[u8]>) -> Vec<u8> {
    let kids: Vec<[u8; 8]> = entries.iter().map(|e| e.1.to_le_bytes()).collect();
    let entries: Vec<(&[u8], &[u8])> = entries.iter().zip(&kids).map(|(e, c)| (e.0, &c[..])).collect();
    let mut page = blank_page(PAGE, pid);
    let spec = NodeSpec { kind: NodeKind::Inner, level, lower, right, high, low: None };
    write_node(&mut page, pid, &spec, &entries).unwrap();
    page
}

/// The bytes of docs/format/btree.md's example, written out by hand.
#[test]
fn a_leaf_has_the_documented_bytes() {
    let mut page = blank_page(PAGE, 7);
    let spec = NodeSpec { low: Some(b"k1"), ..leaf_spec(9, Some(b"k3")) };
    write_node(&mut page, 7, &spec, &[(b"k1a", b"xyz"), (b"k2", b"")]).unwrap();
    set_lsn(&mut page, 0x1234);
    let h = |r: std::ops::Range<usize>| page[r].to_vec();
    assert_eq!(h(8..16), 7u64.to_le_bytes());
    assert_eq!(h(16..24), [b'B', b'T', 1, 1, 0, 0, 2, 0]);
    assert_eq!(h(24..32), 0x1234u64.to_le_bytes());
    assert_eq!(h(32..40), 9u64.to_le_bytes());
    assert_eq!(h(40..48), NONE.to_le_bytes());
    // heap_start 4076 = 4088 - 2 (high key) - 2 (low fence) - 6 - 2; no
    // garbage; the high key at 4086, 2 bytes.
    assert_eq!(h(48..56), [0xec, 0x0f, 0, 0, 0xf6, 0x0f, 2, 0]);
    // The low fence at 4084, 2 bytes; prefix 1 ("k" starts "k1" and "k3").
    assert_eq!(h(56..64), [0xf4, 0x0f, 2, 0, 1, 0, 0, 0]);
    // slot 0: head "1a" (after the prefix), at 4078, 3 + 3 bytes; slot 1:
    // head "2", at 4076, 2 + 0 bytes.
    assert_eq!(h(64..80), [b'1', b'a', 0, 0, 0, 0, 0, 0, 0xee, 0x0f, 3, 0, 3, 0, 0, 0]);
    assert_eq!(h(80..96), [b'2', 0, 0, 0, 0, 0, 0, 0, 0xec, 0x0f, 2, 0, 0, 0, 0, 0]);
    assert_eq!(&page[4076..4088], b"k2k1axyzk1k3");
    assert_eq!(h(4088..4096), [0; 8]);
    let node = Node::parse(&page, 7).unwrap();
    node.check().unwrap();
    assert_eq!((node.count(), node.lsn(), node.right(), node.high_key().unwrap()), (2, 0x1234, 9, Some(&b"k3"[..])));
    assert_eq!((node.low_fence().unwrap(), node.prefix_len()), (Some(&b"k1"[..]), 1));
    assert_eq!((node.key(0).unwrap(), node.value(0).unwrap()), (&b"k1a"[..], &b"xyz"[..]));
    assert_eq!(node.lower_bound(b"k2").unwrap(), (1, true));
    assert_eq!(node.lower_bound(b"k1b").unwrap(), (1, false));
    assert_eq!(node.free_contiguous(), 4076 - 96);
}

#[test]
fn a_node_names_its_page_when_corrupt() {
    let page = leaf(3, &[(b"k", b"v")], NONE, None);
    let err = Node::parse(&page, 4).unwrap_err().to_string();
    assert!(err.contains("page 4") && err.contains("holds pid 3"), "{err}");
    let mut bad = page.clone();
    bad[at::HEAP_START] = 0;
    bad[at::HEAP_START + 1] = 0;
    let err = Node::parse(&bad, 3).unwrap_err().to_string();
    assert!(err.contains("page 3") && err.contains("heap_start"), "{err}");
    let mut bad = page.clone();
    bad[72] = 0xff;
    bad[73] = 0xff;
    let err = Node::parse(&bad, 3).unwrap().key(0).unwrap_err().to_string();
    assert!(err.contains("page 3") && err.contains("slot 0"), "{err}");
}

#[test]
fn separators_are_short_and_between() {
    assert_eq!(separator(b"abc", b"abd"), b"abd");
    assert_eq!(separator(b"abc", b"b"), b"b");
    assert_eq!(separator(b"ab", b"abzz"), b"abz");
    assert_eq!(separator(b"", b"\0"), b"\0");
}

#[test]
fn limits_at_16k_pages() {
    assert_eq!(max_entry_bytes(16384), 4078);
    assert_eq!(max_key_bytes(16384), 1019);
    assert_eq!(max_value_bytes(16384, 24), 4038);
}

/// A tree caught in the middle of a split: the parent does not know the new
/// right leaf yet. The lookup still finds every key by moving right.
#[test]
fn lookup_moves_right_past_a_split_the_parent_does_not_know() {
    let mut pages: HashMap<Pid, Vec<u8>> = HashMap::new();
    pages.insert(1, inner(1, 1, 2, &[(b"pm", 3)], NONE, None));
    pages.insert(2, leaf_in(2, &[(b"pa", b"1"), (b"pc", b"2")], 4, None, Some(b"pe")));
    // The new right leaf: fences "pe" and "pm" share "p", so heads start after it.
    pages.insert(4, leaf_in(4, &[(b"pe", b"3"), (b"pg", b"4"), (b"pgg", b"4g")], 3, Some(b"pe"), Some(b"pm")));
    pages.insert(3, leaf_in(3, &[(b"pm", b"5"), (b"pz", b"6")], NONE, Some(b"pm"), None));
    assert_eq!(Node::parse(&pages[&4], 4).unwrap().prefix_len(), 1);
    let get = |key: &[u8]| {
        let found = lookup(1, key, |pid| pages.get(&pid).map(|p| p.as_slice()).ok_or("no such page")).unwrap();
        found.map(|f| f.value().to_vec())
    };
    for (k, v) in [("pa", "1"), ("pc", "2"), ("pe", "3"), ("pg", "4"), ("pgg", "4g"), ("pm", "5"), ("pz", "6")] {
        assert_eq!(get(k.as_bytes()), Some(v.as_bytes().to_vec()), "{k}");
    }
    for absent in [&b"pf"[..], b"pgf", b"", b"p", b"q"] {
        assert_eq!(get(absent), None);
    }
    pages.insert(2, leaf(2, &[(b"pa", b"1")], 2, Some(b"pe")));
    let err = lookup(1, b"pf", |pid| pages.get(&pid).map(|p| p.as_slice()).ok_or("no such page")).unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0u8..4, 0..6)
}

#[derive(Debug, Clone)]
enum Edit {
    Put(Vec<u8>, usize),
    Remove(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let e = prop_oneof![
        3 => (key(), 0usize..300).prop_map(|(k, n)| Edit::Put(k, n)),
        1 => any::<usize>().prop_map(Edit::Remove),
    ];
    proptest::collection::vec(e, 0..120)
}

proptest! {
    /// Inserts, replacements and removes on one leaf agree with a map; the
    /// node checks after every edit, and garbage is reclaimed by compaction.
    #[test]
    fn leaf_edits_match_a_map(ops in edits(), fenced in any::<bool>()) {
        // Fenced: keys between [1] and [1, 3], so the heads start after a
        // one-byte prefix.
        let mut page = if fenced { leaf_in(5, &[], 9, Some(&[1]), Some(&[1, 3])) } else { leaf(5, &[], NONE, None) };
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Edit::Put(k, n) => {
                    let k = if fenced { [&[1u8][..], &k.iter().map(|&b| b.min(2)).collect::<Vec<_>>()].concat() } else { k };
                    let v = vec![n as u8; n];
                    let node = Node::parse(&page, 5).unwrap();
                    let (i, found) = node.lower_bound(&k).unwrap();
                    let free_before = node.free_total() + if found { model.get(&k).map_or(0, Vec::len) } else { 0 };
                    let fitted = if found { set_value(&mut page, 5, i, &v) } else { insert(&mut page, 5, i, &k, &v) };
                    let need = if found { v.len() } else { SLOT_BYTES + k.len() + v.len() };
                    prop_assert_eq!(fitted.unwrap(), need <= free_before);
                    if need <= free_before {
                        model.insert(k, v);
                    }
                }
                Edit::Remove(r) if !model.is_empty() => {
                    let k = model.keys().nth(r % model.len()).unwrap().clone();
                    let (i, found) = Node::parse(&page, 5).unwrap().lower_bound(&k).unwrap();
                    prop_assert!(found);
                    remove(&mut page, 5, i).unwrap();
                    model.remove(&k);
                }
                Edit::Remove(_) => {}
            }
            let node = Node::parse(&page, 5).unwrap();
            node.check().unwrap();
            let got: Vec<_> = (0..node.count()).map(|i| (node.key(i).unwrap().to_vec(), node.value(i).unwrap().to_vec())).collect();
            prop_assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
        }
    }

    /// A full node plus one more entry always splits into two that fit, in
    /// order around the separator.
    #[test]
    fn splits_fit_and_order(sizes in proptest::collection::vec(0usize..max_value_bytes(PAGE, 8), 2..400), inner_node in any::<bool>(), high_len in 0usize..max_key_bytes(PAGE)) {
        let value = |n: usize| vec![1; if inner_node { CHILD_BYTES } else { n }];
        let high = vec![0xffu8; high_len + 1];
        let mut vals = Vec::new();
        for &n in &sizes {
            vals.push(value(n));
            let over = node_bytes(vals.iter().map(|v| (&[0u8; 8][..], &v[..])), 2 * high.len()) > PAGE;
            if over { break; }
        }
        let keys: Vec<Vec<u8>> = (0..vals.len() as u64).map(|i| (i * 7919).to_be_bytes().to_vec()).collect();
        let entries: Vec<(&[u8], &[u8])> = keys.iter().zip(&vals).map(|(k, v)| (&k[..], &v[..])).collect();
        let kind = if inner_node { NodeKind::Inner } else { NodeKind::Leaf };
        let low = vec![0u8; high.len()];
        match choose_split(PAGE, kind, &entries, Some(&low), Some(&high)) {
            Some(s) => {
                prop_assert!(s.at >= 1 && s.at < entries.len());
                prop_assert!(entries[s.at - 1].0 < &s.separator[..] && &s.separator[..] <= entries[s.at].0);
                let right = if inner_node { &entries[s.at + 1..] } else { &entries[s.at..] };
                let sep = s.separator.len();
                prop_assert!(node_bytes(entries[..s.at].iter().copied(), low.len() + sep) <= PAGE);
                prop_assert!(node_bytes(right.iter().copied(), sep + high.len()) <= PAGE);
            }
            None => prop_assert!(entries.len() < 3, "{} entries did not split", entries.len()),
        }
    }

    /// Parsing, every accessor, every edit and the lookup survive garbage.
    #[test]
    fn garbage_nodes_never_panic(mut page in proptest::collection::vec(any::<u8>(), 0..1100), pid in 0u64..3, key in key(), grow in any::<bool>()) {
        if grow { page.resize(1024, 0); }
        if page.len() >= 18 {
            page[8..16].copy_from_slice(&pid.to_le_bytes());
            page[16] = b'B';
            page[17] = b'T';
        }
        poke_everything(&page, pid, &key);
    }

    /// The same on a valid node with a few bytes changed.
    #[test]
    fn damaged_nodes_never_panic(hits in proptest::collection::vec((16usize..1016, any::<u8>()), 1..6), key in key(), inner_node in any::<bool>()) {
        let mut page = if inner_node {
            let mut p = blank_page(1024, 0);
            let spec = NodeSpec { kind: NodeKind::Inner, level: 1, lower: 1, right: 2, high: Some(b"\x03"), low: Some(b"\x01") };
            write_node(&mut p, 0, &spec, &[(b"\x01", &3u64.to_le_bytes()), (b"\x02\x01", &0u64.to_le_bytes())]).unwrap();
            p
        } else {
            let mut p = blank_page(1024, 0);
            let spec = NodeSpec { low: Some(b"\x01"), ..leaf_spec(2, Some(b"\x03")) };
            write_node(&mut p, 0, &spec, &[(b"\x01", b"abc"), (b"\x02\x01", b"")]).unwrap();
            p
        };
        for (i, x) in hits { page[i] ^= x; }
        poke_everything(&page, 0, &key);
    }
}

fn poke_everything(page: &[u8], pid: Pid, key: &[u8]) {
    if let Ok(node) = Node::parse(page, pid) {
        let _ = node.check();
        let _ = node.high_key();
        let _ = node.lower_bound(key);
        if !node.is_leaf() {
            let _ = node.child_for(key);
        }
        for i in 0..node.count().min(300) + 1 {
            let _ = (node.key(i), node.value(i), node.child(i));
        }
        for i in 0..3 {
            let mut p = page.to_vec();
            let _ = insert(&mut p, pid, i, key, b"vv");
            let mut p = page.to_vec();
            let _ = set_value(&mut p, pid, i, &[7; 40]);
            let mut p = page.to_vec();
            let _ = remove(&mut p, pid, i);
        }
        let mut p = page.to_vec();
        let _ = compact(&mut p, pid);
    }
    let _ = lookup(pid, key, |p| if p < 3 { Ok(page) } else { Err("no page") });
}
