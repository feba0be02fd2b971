//! Pure graph planning: hazard edges, stable topological order, transient intervals and the
//! whole-buffer reuse plan. No wgpu objects here, so every rule is unit-tested without a GPU.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

/// A logical resource as the planner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKey {
    /// Logical buffer index.
    Buffer(u32),
    /// Logical texture index.
    Texture(u32),
    /// One mip level of one array layer of a logical texture: the unit of texture hazards.
    TextureSubresource {
        /// Logical texture index.
        texture: u32,
        /// Mip level.
        mip: u32,
        /// Array layer.
        layer: u32,
    },
}

/// One node's declared uses and explicit dependencies, in insertion order.
#[derive(Clone, Debug, Default)]
pub struct PlanNode {
    /// Stable node id.
    pub id: String,
    /// `(resource, reads, writes)` for every declared use.
    pub uses: Vec<(ResourceKey, bool, bool)>,
    /// Ids of nodes that must precede this one.
    pub depends_on: Vec<String>,
}

/// Why one node must follow another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    /// The later node reads what the earlier wrote.
    ReadAfterWrite,
    /// Both write; the later write must land last.
    WriteAfterWrite,
    /// The later node overwrites what the earlier still reads.
    WriteAfterRead,
    /// Declared with `depends_on`.
    Explicit,
}

/// A dependency edge between node indices (insertion order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    /// Node that runs first.
    pub from: usize,
    /// Node that runs after.
    pub to: usize,
    /// The hazard or explicit reason.
    pub kind: EdgeKind,
}

/// Planning failure, by node index or id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// `depends_on` of node `node` names an id no node has.
    UnknownDependency {
        /// Index of the declaring node.
        node: usize,
        /// The unknown id.
        dependency: String,
    },
    /// These nodes lie on or behind a cycle.
    Cycle(Vec<usize>),
}

/// Derives hazard edges in insertion order, then explicit edges.
///
/// Per logical resource the planner tracks the last writer and the readers since it: a read
/// depends on the writer (RAW); a write depends on the writer (WAW) and those readers (WAR).
pub fn derive_edges(nodes: &[PlanNode]) -> Result<Vec<Edge>, PlanError> {
    #[derive(Default)]
    struct State {
        writer: Option<usize>,
        readers: Vec<usize>,
    }
    let mut state: HashMap<ResourceKey, State> = HashMap::new();
    let mut edges: BTreeSet<Edge> = BTreeSet::new();
    for (i, node) in nodes.iter().enumerate() {
        // Merge a node's uses of one resource so that declaring read and write separately
        // equals declaring read-write.
        let mut merged: Vec<(ResourceKey, bool, bool)> = Vec::new();
        for &(key, r, w) in &node.uses {
            match merged.iter_mut().find(|(k, _, _)| *k == key) {
                Some(m) => {
                    m.1 |= r;
                    m.2 |= w;
                }
                None => merged.push((key, r, w)),
            }
        }
        for (key, reads, writes) in merged {
            let s = state.entry(key).or_default();
            if let Some(wr) = s.writer.filter(|&wr| wr != i) {
                if reads {
                    edges.insert(Edge {
                        from: wr,
                        to: i,
                        kind: EdgeKind::ReadAfterWrite,
                    });
                }
                if writes {
                    edges.insert(Edge {
                        from: wr,
                        to: i,
                        kind: EdgeKind::WriteAfterWrite,
                    });
                }
            }
            if writes {
                for &rd in s.readers.iter().filter(|&&rd| rd != i) {
                    edges.insert(Edge {
                        from: rd,
                        to: i,
                        kind: EdgeKind::WriteAfterRead,
                    });
                }
                s.writer = Some(i);
                // A read-write node is not recorded as a reader: a later writer already
                // depends on it through WAW.
                s.readers.clear();
            } else if reads {
                s.readers.push(i);
            }
        }
    }
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        for dep in &node.depends_on {
            let Some(&from) = index.get(dep.as_str()) else {
                return Err(PlanError::UnknownDependency {
                    node: i,
                    dependency: dep.clone(),
                });
            };
            edges.insert(Edge {
                from,
                to: i,
                kind: EdgeKind::Explicit,
            });
        }
    }
    Ok(edges.into_iter().collect())
}

/// Stable topological order: among ready nodes, the lowest insertion index runs first.
pub fn stable_order(node_count: usize, edges: &[Edge]) -> Result<Vec<usize>, PlanError> {
    let mut indegree = vec![0usize; node_count];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); node_count];
    let mut seen: BTreeSet<(usize, usize)> = BTreeSet::new();
    for e in edges {
        if seen.insert((e.from, e.to)) {
            indegree[e.to] += 1;
            succ[e.from].push(e.to);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..node_count)
        .filter(|&i| indegree[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(node_count);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &s in &succ[i] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push(Reverse(s));
            }
        }
    }
    if order.len() != node_count {
        let stuck = (0..node_count).filter(|&i| indegree[i] > 0).collect();
        return Err(PlanError::Cycle(stuck));
    }
    Ok(order)
}

/// A transient buffer the planner places.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransientRequest {
    /// Required bytes.
    pub byte_length: u64,
    /// Required usage flags.
    pub usage: wgpu::BufferUsages,
    /// First and last position in the compiled order that uses it; `None` if unused.
    pub interval: Option<(usize, usize)>,
}

/// One physical allocation and the logical transients it hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalAllocation {
    /// Maximum byte length over tenants.
    pub byte_length: u64,
    /// Union of tenant usages.
    pub usage: wgpu::BufferUsages,
    /// Indices into the request list, in placement order.
    pub tenants: Vec<usize>,
}

/// Result of transient planning: which physical allocation hosts each logical transient.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AliasPlan {
    /// Physical allocations.
    pub physical: Vec<PhysicalAllocation>,
    /// `assignment[i]` is the physical allocation of request `i`.
    pub assignment: Vec<usize>,
}

fn mappable(usage: wgpu::BufferUsages) -> bool {
    usage.intersects(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE)
}

/// Interval reuse: transients are placed by first use; a physical allocation whose last
/// tenant's interval ended strictly before the new first use may host it. Among free
/// allocations the smallest one that is large enough wins, else the largest grows. Mappable
/// or unused transients always get their own allocation.
pub fn plan_transients(requests: &[TransientRequest]) -> AliasPlan {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| (requests[i].interval.map_or(usize::MAX, |iv| iv.0), i));
    let mut plan = AliasPlan {
        physical: Vec::new(),
        assignment: vec![usize::MAX; requests.len()],
    };
    // Last position in use per physical allocation; None = never reusable.
    let mut busy_until: Vec<Option<usize>> = Vec::new();
    for i in order {
        let r = requests[i];
        let reusable = !mappable(r.usage) && r.interval.is_some();
        let mut chosen = None;
        if let Some((first, last)) = r.interval.filter(|_| reusable) {
            let free =
                (0..plan.physical.len()).filter(|&p| busy_until[p].is_some_and(|end| end < first));
            let mut best_fit: Option<usize> = None;
            let mut largest: Option<usize> = None;
            for p in free {
                let len = plan.physical[p].byte_length;
                if len >= r.byte_length
                    && best_fit.is_none_or(|b| len < plan.physical[b].byte_length)
                {
                    best_fit = Some(p);
                }
                if largest.is_none_or(|b| len > plan.physical[b].byte_length) {
                    largest = Some(p);
                }
            }
            chosen = best_fit.or(largest);
            if let Some(p) = chosen {
                let phys = &mut plan.physical[p];
                phys.byte_length = phys.byte_length.max(r.byte_length);
                phys.usage |= r.usage;
                phys.tenants.push(i);
                busy_until[p] = Some(last);
            }
        }
        let p = match chosen {
            Some(p) => p,
            None => {
                plan.physical.push(PhysicalAllocation {
                    byte_length: r.byte_length,
                    usage: r.usage,
                    tenants: vec![i],
                });
                busy_until.push(if reusable {
                    r.interval.map(|iv| iv.1)
                } else {
                    None
                });
                plan.physical.len() - 1
            }
        };
        plan.assignment[i] = p;
    }
    plan
}

/// A graph-owned texture the planner places.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextureRequest {
    /// Its descriptor with the id cleared: only textures with equal shapes share.
    pub shape: crate::TextureDescriptor,
    /// First and last position in the compiled order that uses it; `None` if unused.
    pub interval: Option<(usize, usize)>,
}

/// Interval reuse of textures: placed by first use, a texture joins the first allocation of
/// the same shape whose last tenant finished strictly before; unused textures get their own.
/// Returns the allocation index of each request (allocations numbered in creation order).
pub fn plan_textures(requests: &[TextureRequest]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| (requests[i].interval.map_or(usize::MAX, |iv| iv.0), i));
    let mut slots: Vec<(&crate::TextureDescriptor, Option<usize>)> = Vec::new();
    let mut assignment = vec![usize::MAX; requests.len()];
    for i in order {
        let r = &requests[i];
        let free = r.interval.and_then(|(first, _)| {
            slots
                .iter()
                .position(|(shape, busy)| *shape == &r.shape && busy.is_some_and(|b| b < first))
        });
        let busy = r.interval.map(|iv| iv.1);
        let slot = match free {
            Some(s) => {
                slots[s].1 = busy;
                s
            }
            None => {
                slots.push((&r.shape, busy));
                slots.len() - 1
            }
        };
        assignment[i] = slot;
    }
    // Number allocations by their first tenant in request order, so labels are stable.
    let mut renumber = vec![usize::MAX; slots.len()];
    let mut next = 0;
    for a in assignment.iter_mut() {
        if renumber[*a] == usize::MAX {
            renumber[*a] = next;
            next += 1;
        }
        *a = renumber[*a];
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::BufferUsages as U;

    fn node(id: &str, uses: &[(u32, bool, bool)]) -> PlanNode {
        PlanNode {
            id: id.into(),
            uses: uses
                .iter()
                .map(|&(b, r, w)| (ResourceKey::Buffer(b), r, w))
                .collect(),
            depends_on: vec![],
        }
    }

    #[test]
    fn hazards_cover_raw_waw_war() {
        // visibility writes flags; scan reads; clear overwrites.
        let nodes = [
            node("visibility", &[(0, false, true)]),
            node("scan", &[(0, true, false), (1, false, true)]),
            node("clear", &[(0, false, true)]),
        ];
        let edges = derive_edges(&nodes).unwrap();
        assert_eq!(
            edges,
            vec![
                Edge {
                    from: 0,
                    to: 1,
                    kind: EdgeKind::ReadAfterWrite
                },
                Edge {
                    from: 0,
                    to: 2,
                    kind: EdgeKind::WriteAfterWrite
                },
                Edge {
                    from: 1,
                    to: 2,
                    kind: EdgeKind::WriteAfterRead
                },
            ]
        );
    }

    #[test]
    fn read_write_participates_in_both_rules() {
        let nodes = [
            node("a", &[(0, false, true)]),
            node("b", &[(0, true, false)]),
            node("c", &[(0, true, true)]),
            node("d", &[(0, true, false)]),
        ];
        let edges = derive_edges(&nodes).unwrap();
        assert!(edges.contains(&Edge {
            from: 0,
            to: 2,
            kind: EdgeKind::ReadAfterWrite
        }));
        assert!(edges.contains(&Edge {
            from: 0,
            to: 2,
            kind: EdgeKind::WriteAfterWrite
        }));
        assert!(edges.contains(&Edge {
            from: 1,
            to: 2,
            kind: EdgeKind::WriteAfterRead
        }));
        assert!(edges.contains(&Edge {
            from: 2,
            to: 3,
            kind: EdgeKind::ReadAfterWrite
        }));
        assert_eq!(edges.len(), 5, "{edges:?}");
    }

    #[test]
    fn readers_do_not_order_among_themselves() {
        let nodes = [
            node("w", &[(0, false, true)]),
            node("r1", &[(0, true, false)]),
            node("r2", &[(0, true, false)]),
        ];
        let edges = derive_edges(&nodes).unwrap();
        assert_eq!(edges.len(), 2);
        assert!(edges.iter().all(|e| e.from == 0));
    }

    #[test]
    fn explicit_edges_can_reorder_and_ties_keep_insertion_order() {
        let mut nodes = vec![node("a", &[]), node("b", &[]), node("c", &[])];
        nodes[0].depends_on = vec!["c".into()];
        let edges = derive_edges(&nodes).unwrap();
        assert_eq!(stable_order(3, &edges).unwrap(), vec![1, 2, 0]);
        let plain = [node("x", &[]), node("y", &[]), node("z", &[])];
        assert_eq!(
            stable_order(3, &derive_edges(&plain).unwrap()).unwrap(),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn unknown_dependency_and_cycle_are_reported() {
        let mut nodes = vec![
            node("a", &[(0, false, true)]),
            node("b", &[(0, true, false)]),
        ];
        nodes[1].depends_on = vec!["nope".into()];
        assert_eq!(
            derive_edges(&nodes),
            Err(PlanError::UnknownDependency {
                node: 1,
                dependency: "nope".into()
            })
        );
        nodes[1].depends_on.clear();
        nodes[0].depends_on = vec!["b".into()];
        let edges = derive_edges(&nodes).unwrap();
        assert_eq!(stable_order(2, &edges), Err(PlanError::Cycle(vec![0, 1])));
    }

    fn req(len: u64, iv: (usize, usize)) -> TransientRequest {
        TransientRequest {
            byte_length: len,
            usage: U::STORAGE,
            interval: Some(iv),
        }
    }

    #[test]
    fn disjoint_lifetimes_share_and_overlapping_do_not() {
        let plan = plan_transients(&[
            req(100, (0, 1)),
            req(300, (1, 2)),
            req(200, (2, 3)),
            req(50, (4, 4)),
        ]);
        // 0 ends at 1, 2 starts at 2: shares with 0 (grows to 200). 1 overlaps both.
        // 3 starts at 4: both allocations free; best fit is the 200-byte one... the 0/2 one is
        // busy until 3 < 4 so free; 300-byte (busy until 2) free too; smallest fitting = 200.
        assert_eq!(plan.assignment, vec![0, 1, 0, 0]);
        assert_eq!(plan.physical[0].byte_length, 200);
        assert_eq!(plan.physical[1].byte_length, 300);
        let logical: u64 = 100 + 300 + 200 + 50;
        let physical: u64 = plan.physical.iter().map(|p| p.byte_length).sum();
        assert_eq!((logical, physical), (650, 500));
    }

    #[test]
    fn same_node_boundary_is_not_disjoint_and_mappable_never_shares() {
        let plan = plan_transients(&[req(64, (0, 2)), req(64, (2, 3))]);
        assert_eq!(plan.physical.len(), 2);
        let mut m = req(64, (5, 6));
        m.usage = U::MAP_READ | U::COPY_DST;
        let plan = plan_transients(&[req(64, (0, 1)), m]);
        assert_eq!(plan.physical.len(), 2);
        let unused = TransientRequest {
            byte_length: 8,
            usage: U::STORAGE,
            interval: None,
        };
        let plan = plan_transients(&[req(64, (0, 1)), unused, req(64, (3, 4))]);
        assert_eq!(plan.assignment, vec![0, 1, 0]);
        assert_eq!(plan.physical.len(), 2);
    }

    #[test]
    fn textures_alias_only_with_equal_shapes_and_disjoint_lifetimes() {
        let shape = |format| {
            let mut d = crate::TextureDescriptor::new(
                "",
                (8, 8),
                format,
                wgpu::TextureUsages::RENDER_ATTACHMENT,
            );
            d.id.clear();
            d
        };
        let t = |format, iv| TextureRequest {
            shape: shape(format),
            interval: iv,
        };
        use wgpu::TextureFormat::{R32Float, Rgba8Unorm};
        let plan = plan_textures(&[
            t(Rgba8Unorm, Some((0, 1))),
            t(Rgba8Unorm, Some((1, 2))),
            t(Rgba8Unorm, Some((2, 3))),
            t(R32Float, Some((4, 4))),
            t(Rgba8Unorm, None),
        ]);
        // 1 overlaps 0 at position 1; 2 starts after 0 ends; a different format never shares.
        assert_eq!(plan, vec![0, 1, 0, 2, 3]);
    }

    #[test]
    fn usages_union_over_tenants() {
        let mut a = req(16, (0, 0));
        a.usage = U::STORAGE | U::COPY_SRC;
        let mut b = req(32, (1, 1));
        b.usage = U::STORAGE | U::INDIRECT;
        let plan = plan_transients(&[a, b]);
        assert_eq!(plan.physical.len(), 1);
        assert_eq!(
            plan.physical[0].usage,
            U::STORAGE | U::COPY_SRC | U::INDIRECT
        );
        assert_eq!(plan.physical[0].byte_length, 32);
    }
}
