//! [`WgpuProgramCompiler`]: lowers a [`Program`] into one command graph (see the module doc
//! of [`super`] for the lowering rules) and reports every decision.

use std::collections::{HashMap, HashSet};

use gpugraph_command::dispatch::split_rows;
use gpugraph_command::wgpu::{self, util::DeviceExt, BufferUsages};
use gpugraph_command::{
    Access, Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor,
    DispatchNode, GraphError, Grid, ShaderSource, VectorFormat,
};

use super::error::ProgramTreeError;
use super::primitive::{require_word, PrimitiveNode};
use super::report::{ProgramReport, TreeReport};
use super::{join, Program};
use crate::lowering::{
    BackendCapabilities, LoweringDecision, LoweringReport, LoweringSet, LoweringSource,
};

const GATE_WGSL: &str = include_str!("gate.wgsl");

/// Realization names of the decision report.
pub(crate) mod names {
    pub const FLATTENED: &str = "flattened";
    pub const UNROLLED: &str = "bounded unrolling";
    pub const GATED_LOOP: &str = "gpu-gated bounded sequence";
    pub const GATED_BRANCHES: &str = "gpu-gated branches";
    pub const EXPLICIT: &str = "explicit-command-nodes";
}

/// The command nodes chosen for a semantic operation, realized once per compile.
struct Realized {
    decision: usize,
    nodes: Vec<PrimitiveNode>,
}

/// `GateParams` in gate.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct GateParams {
    pub mode: u32,
    pub count: u32,
    pub pred_off: u32,
    pub parent_off: u32,
    pub has_parent: u32,
    pub max_count: u32,
    pub pad1: u32,
    pub pad2: u32,
}

/// Whether a gated region is a loop or a conditional.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RegionKind {
    /// A loop with a runtime predicate.
    Loop,
    /// A conditional.
    Conditional,
}

/// A GPU-gated region of a compiled program and its state words (a 16-byte buffer the
/// caller may copy out after completion: `[active, active-else, iterations, 0]`).
#[derive(Clone, Debug)]
pub struct GatedRegion {
    /// Tree path, e.g. `pcg/iterate`.
    pub path: String,
    /// Loop or conditional.
    pub kind: RegionKind,
    /// The state buffer (STORAGE | COPY_SRC), imported into the graph.
    pub state: wgpu::Buffer,
    /// Dispatches one execution of the region holds (the gate writes their counts).
    pub dispatches: usize,
    /// Gate executions emitted (a loop's `max_iterations`).
    pub gates: usize,
}

/// The result of [`WgpuProgramCompiler::compile`]: the report and the gated regions. The
/// nodes are in the caller's graph.
#[derive(Clone, Debug)]
pub struct CompiledProgram {
    /// Decisions, capabilities and the printable tree.
    pub report: ProgramReport,
    /// Every gated region, in first-emission order.
    pub regions: Vec<GatedRegion>,
}

impl CompiledProgram {
    /// The region at tree path `path`.
    pub fn region(&self, path: &str) -> Option<&GatedRegion> {
        self.regions.iter().find(|r| r.path == path)
    }
}

/// The WebGPU (wgpu) program compiler. Semantic operations ([`Program::Semantic`]) lower
/// through the program lowerings of its [`LoweringSet`] (a realization per operation, chosen
/// from shape and capabilities); [`Program::Operation`] primitives bring their own nodes.
#[derive(Clone, Debug)]
pub struct WgpuProgramCompiler {
    capabilities: BackendCapabilities,
    lowerings: LoweringSet,
}

struct RegionBuild {
    path: String,
    kind: RegionKind,
    predicate: DataView,
    parent: Option<(usize, u32)>,
    geometry: Vec<[u32; 4]>,
    finalized: bool,
    cursor: usize,
    gates: usize,
}

enum Emit {
    Node {
        node: Box<PrimitiveNode>,
        gate: Option<(usize, usize)>,
    },
    Gate {
        id: String,
        region: usize,
        mode: u32,
    },
}

struct Walk<'a> {
    caps: &'a BackendCapabilities,
    set: &'a LoweringSet,
    graph: &'a mut CommandGraph,
    realized: HashMap<String, Realized>,
    regions: Vec<RegionBuild>,
    region_by_path: HashMap<String, usize>,
    emits: Vec<Emit>,
    decisions: Vec<LoweringDecision>,
    decision_by_path: HashMap<String, usize>,
}

impl WgpuProgramCompiler {
    /// A compiler advertising `capabilities` (see [`BackendCapabilities::of`]) with the
    /// built-in lowerings.
    pub fn new(capabilities: BackendCapabilities) -> Self {
        Self::with_lowerings(capabilities, LoweringSet::builtins())
    }

    /// A compiler advertising `capabilities` that lowers semantic operations through
    /// `lowerings` (e.g. the built-ins plus [`LoweringSet::with_program_lowerings`]).
    pub fn with_lowerings(capabilities: BackendCapabilities, lowerings: LoweringSet) -> Self {
        Self {
            capabilities,
            lowerings,
        }
    }

    /// The lowerings semantic operations go through.
    pub fn lowerings(&self) -> &LoweringSet {
        &self.lowerings
    }

    /// The capabilities lowerings see.
    pub fn capabilities(&self) -> &BackendCapabilities {
        &self.capabilities
    }

    /// Lowers `program` into `graph` (nodes, gates, state and geometry buffers). On error the
    /// graph may hold some of the nodes: drop it.
    pub fn compile(
        &self,
        program: &Program,
        graph: &mut CommandGraph,
    ) -> Result<CompiledProgram, ProgramTreeError> {
        check_ids(program, "", &mut HashSet::new())?;
        let mut walk = Walk {
            caps: &self.capabilities,
            set: &self.lowerings,
            graph,
            realized: HashMap::new(),
            regions: Vec::new(),
            region_by_path: HashMap::new(),
            emits: Vec::new(),
            decisions: Vec::new(),
            decision_by_path: HashMap::new(),
        };
        walk.node(program, None, "", "")?;
        let Walk {
            regions,
            emits,
            decisions,
            ..
        } = walk;
        let report = ProgramReport {
            program: program.id().to_string(),
            capabilities: self.capabilities.clone(),
            tree: TreeReport::build(program, "", &decisions),
            lowering: LoweringReport { decisions },
        };
        let regions = emit(graph, regions, emits)?;
        Ok(CompiledProgram { report, regions })
    }
}

fn check_ids(
    p: &Program,
    prefix: &str,
    seen: &mut HashSet<String>,
) -> Result<(), ProgramTreeError> {
    let path = join(prefix, p.id());
    if p.id().is_empty() || p.id().contains('/') || !seen.insert(path.clone()) {
        return Err(ProgramTreeError::DuplicateId { id: path });
    }
    match p {
        Program::Operation(_) | Program::Semantic(_) => Ok(()),
        Program::Composite { children, .. } => {
            children.iter().try_for_each(|c| check_ids(c, &path, seen))
        }
        Program::Conditional {
            then, otherwise, ..
        } => {
            check_ids(then, &path, seen)?;
            otherwise
                .as_ref()
                .map_or(Ok(()), |o| check_ids(o, &path, seen))
        }
        Program::Loop { body, .. } => check_ids(body, &path, seen),
    }
}

impl Walk<'_> {
    fn decide(
        &mut self,
        path: &str,
        operation_type: &str,
        realization: &str,
        reason: String,
    ) -> usize {
        if let Some(&i) = self.decision_by_path.get(path) {
            return i;
        }
        self.decisions.push(LoweringDecision {
            operation: path.to_string(),
            operation_type: operation_type.to_string(),
            source: LoweringSource::BuiltIn,
            realization: realization.to_string(),
            reason,
            nodes: Vec::new(),
            node_count: 0,
        });
        let i = self.decisions.len() - 1;
        self.decision_by_path.insert(path.to_string(), i);
        i
    }

    fn note_node(&mut self, decision: usize, id: &str) {
        let d = &mut self.decisions[decision];
        d.node_count += 1;
        // Only the first execution's ids: a gated loop emits thousands of copies.
        if d.nodes.len() < 64 && !d.nodes.iter().any(|n| n == id) && d.node_count <= 64 {
            d.nodes.push(id.to_string());
        }
    }

    fn region(
        &mut self,
        path: &str,
        kind: RegionKind,
        predicate: DataView,
        scope: Option<(usize, u32)>,
    ) -> usize {
        if let Some(&r) = self.region_by_path.get(path) {
            return r;
        }
        self.regions.push(RegionBuild {
            path: path.to_string(),
            kind,
            predicate,
            parent: scope,
            geometry: Vec::new(),
            finalized: false,
            cursor: 0,
            gates: 0,
        });
        let r = self.regions.len() - 1;
        self.region_by_path.insert(path.to_string(), r);
        r
    }

    fn gate(&mut self, inst: &str, region: usize, mode: u32, decision: usize) {
        let id = join(inst, "gate");
        self.note_node(decision, &id);
        self.regions[region].cursor = 0;
        self.regions[region].gates += 1;
        self.emits.push(Emit::Gate { id, region, mode });
    }

    fn end_execution(&mut self, region: usize) -> Result<(), ProgramTreeError> {
        let r = &mut self.regions[region];
        if r.finalized && r.cursor != r.geometry.len() {
            return Err(ProgramTreeError::Geometry {
                region: r.path.clone(),
                node: format!("{} of {} dispatches", r.cursor, r.geometry.len()),
            });
        }
        r.finalized = true;
        Ok(())
    }

    fn predicate_ok(&self, path: &str, p: &DataView) -> Result<(), ProgramTreeError> {
        require_word(path, p, VectorFormat::Uint32)?;
        if !self.caps.gpu_resident_conditionals {
            return Err(ProgramTreeError::RuntimePredicateUnsupported {
                node: path.to_string(),
                backend: self.caps.backend.clone(),
            });
        }
        Ok(())
    }

    /// Emits `p` (static path `prefix/id`, node ids `inst/id`) in `scope` (the nearest gated
    /// region and branch).
    fn node(
        &mut self,
        p: &Program,
        scope: Option<(usize, u32)>,
        prefix: &str,
        inst: &str,
    ) -> Result<(), ProgramTreeError> {
        let path = join(prefix, p.id());
        let inst = join(inst, p.id());
        match p {
            Program::Operation(op) => {
                let d = self.decide(
                    &path,
                    op.operation_type(),
                    names::EXPLICIT,
                    "ProgramPrimitive::command_nodes: the primitive describes its dispatches, the compiler adds (and may gate) them".into(),
                );
                for c in op.choices(self.caps) {
                    self.decide(
                        &format!("{path}#{}", c.aspect),
                        op.operation_type(),
                        &c.realization,
                        c.reason,
                    );
                }
                let nodes = op.command_nodes(self.graph, self.caps)?;
                self.push_nodes(nodes, d, &inst, scope)?;
            }
            Program::Semantic(op) => {
                let (d, nodes) = match self.realized.get(&path) {
                    Some(r) => (r.decision, r.nodes.clone()),
                    None => {
                        let set = self.set;
                        let (lowering, source) =
                            set.program_lowering(&op.name).ok_or_else(|| {
                                ProgramTreeError::NoLowering {
                                    operation: path.clone(),
                                    operation_type: op.name.clone(),
                                }
                            })?;
                        let chosen = lowering.select(op, self.caps)?;
                        let nodes = chosen.realization.realize(op, self.graph, self.caps)?;
                        let d =
                            self.decide(&path, &op.name, chosen.realization.name(), chosen.reason);
                        self.decisions[d].source = source;
                        self.realized.insert(
                            path.clone(),
                            Realized {
                                decision: d,
                                nodes: nodes.clone(),
                            },
                        );
                        (d, nodes)
                    }
                };
                self.push_nodes(nodes, d, &inst, scope)?;
            }
            Program::Composite { children, .. } => {
                self.decide(
                    &path,
                    "composite",
                    names::FLATTENED,
                    "WebGPU has no child-graph primitive: the children are emitted in order into the one command graph".into(),
                );
                for c in children {
                    self.node(c, scope, &path, &inst)?;
                }
            }
            Program::Loop {
                body,
                max_iterations,
                predicate: None,
                ..
            } => {
                self.decide(
                    &path,
                    "loop",
                    names::UNROLLED,
                    format!("WebGPU has no native graph loop and the loop has no runtime predicate: the body is emitted {max_iterations} times"),
                );
                for i in 0..*max_iterations {
                    self.node(body, scope, &path, &join(&inst, &i.to_string()))?;
                }
            }
            Program::Loop {
                body,
                max_iterations,
                predicate: Some(pred),
                ..
            } => {
                self.predicate_ok(&path, pred)?;
                let d = self.decide(
                    &path,
                    "loop",
                    names::GATED_LOOP,
                    format!("WebGPU has no native graph loop: {max_iterations} iterations, each behind a gate kernel that writes the iteration's indirect workgroup counts from the predicate word (0 once it is false); no CPU readback"),
                );
                let r = self.region(&path, RegionKind::Loop, *pred, scope);
                let first = !self.regions[r].finalized;
                for i in 0..*max_iterations {
                    let it = join(&inst, &i.to_string());
                    self.gate(&it, r, u32::from(i > 0), d);
                    self.node(body, Some((r, 0)), &path, &it)?;
                    self.end_execution(r)?;
                }
                if first && *max_iterations > 0 {
                    let per = self.regions[r].geometry.len();
                    let note = self.dispatch_note(per, "iteration");
                    self.decisions[d].reason.push_str(&note);
                }
            }
            Program::Conditional {
                predicate,
                then,
                otherwise,
                ..
            } => {
                self.predicate_ok(&path, predicate)?;
                let d = self.decide(
                    &path,
                    "conditional",
                    names::GATED_BRANCHES,
                    "the predicate word is read once by a gate kernel that writes both branches' indirect workgroup counts (the branch not taken gets 0); no CPU readback".into(),
                );
                let r = self.region(&path, RegionKind::Conditional, *predicate, scope);
                let first = !self.regions[r].finalized;
                self.gate(&inst, r, 2, d);
                self.node(then, Some((r, 0)), &path, &inst)?;
                if let Some(o) = otherwise {
                    self.node(o, Some((r, 1)), &path, &inst)?;
                }
                self.end_execution(r)?;
                if first {
                    let per = self.regions[r].geometry.len();
                    let note = self.dispatch_note(per, "execution (both branches)");
                    self.decisions[d].reason.push_str(&note);
                }
            }
        }
        Ok(())
    }

    /// `; N indirect dispatches per {unit} + 1 gate, …validation…` for a gated decision.
    fn dispatch_note(&self, dispatches: usize, unit: &str) -> String {
        let validation = if self.caps.device.indirect_validation {
            format!(
                "wgpu validates each indirect dispatch with one more dispatch: {} in all",
                2 * dispatches + 1
            )
        } else {
            "indirect validation off on this device: the gate clamps its counts to the per-dimension limit".to_string()
        };
        format!("; {dispatches} indirect dispatches per {unit} + 1 gate ({validation})")
    }

    /// Emits one execution's `nodes` of decision `d` under instance prefix `inst`, gated
    /// when `scope` is a gated region.
    fn push_nodes(
        &mut self,
        nodes: Vec<PrimitiveNode>,
        d: usize,
        inst: &str,
        scope: Option<(usize, u32)>,
    ) -> Result<(), ProgramTreeError> {
        for mut node in nodes {
            let id = join(inst, node.id());
            match &mut node {
                PrimitiveNode::Dispatch(n) => n.id = id.clone(),
                PrimitiveNode::Copy { id: i, .. } => *i = id.clone(),
            }
            self.note_node(d, &id);
            let gate = match scope {
                None => None,
                Some((r, branch)) => Some((r, self.gated_slot(r, branch, &node)?)),
            };
            self.emits.push(Emit::Node {
                node: Box::new(node),
                gate,
            });
        }
        Ok(())
    }

    /// The indirect-argument slot of `node` in region `r`, recording its geometry on the
    /// region's first execution.
    fn gated_slot(
        &mut self,
        r: usize,
        branch: u32,
        node: &PrimitiveNode,
    ) -> Result<usize, ProgramTreeError> {
        let region = &self.regions[r].path;
        let dispatch = match node {
            PrimitiveNode::Copy { id, .. } => {
                return Err(ProgramTreeError::Ungatable {
                    region: region.clone(),
                    node: id.clone(),
                    kind: "copy",
                    reason: "a copy has no indirect workgroup count to zero; write it as a copy kernel or move it out of the gated region",
                })
            }
            PrimitiveNode::Dispatch(d) => d,
        };
        let max = self
            .graph
            .device()
            .limits()
            .max_compute_workgroups_per_dimension;
        let [x, y, z] = match dispatch.grid {
            // The gate clamps every count it writes to the limit anyway (the device may skip
            // wgpu's indirect validation); a grid above it is an error here, not a clamp.
            Grid::Workgroups(w) if w.iter().any(|&c| c > max) => {
                return Err(GraphError::InvalidDispatch {
                    graph: self.graph.id().to_string(),
                    node: dispatch.id.clone(),
                    reason: format!(
                        "workgroups {w:?} exceed the device's per-dimension limit {max}"
                    ),
                }
                .into())
            }
            Grid::Workgroups(w) => w,
            Grid::Rows {
                rows,
                rows_per_workgroup,
            } => split_rows(rows.div_ceil(u64::from(rows_per_workgroup.max(1))), max)
                .ok_or_else(|| GraphError::InvalidDispatch {
                    graph: self.graph.id().to_string(),
                    node: dispatch.id.clone(),
                    reason: format!(
                        "{rows} rows need more workgroups than the device's per-dimension limit squared"
                    ),
                })?,
            Grid::Indirect(_) => {
                return Err(ProgramTreeError::Ungatable {
                    region: region.clone(),
                    node: dispatch.id.clone(),
                    kind: "indirect dispatch",
                    reason: "its workgroup count is already GPU-written; a gate cannot replace it",
                })
            }
        };
        let g = [x, y, z, branch];
        let reg = &mut self.regions[r];
        let slot = reg.cursor;
        reg.cursor += 1;
        if reg.finalized {
            if reg.geometry.get(slot) != Some(&g) {
                return Err(ProgramTreeError::Geometry {
                    region: reg.path.clone(),
                    node: dispatch.id.clone(),
                });
            }
        } else {
            reg.geometry.push(g);
        }
        Ok(slot)
    }
}

/// Creates the regions' buffers and adds every node to `graph` in emission order.
fn emit(
    graph: &mut CommandGraph,
    regions: Vec<RegionBuild>,
    emits: Vec<Emit>,
) -> Result<Vec<GatedRegion>, ProgramTreeError> {
    struct Bufs {
        state: BufferHandle,
        geometry: BufferHandle,
        args: BufferHandle,
    }
    let mut out = Vec::with_capacity(regions.len());
    let mut bufs = Vec::with_capacity(regions.len());
    for r in &regions {
        let state_usage = BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
        let state = graph.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{}/state", r.path)),
            size: 16,
            usage: state_usage,
            mapped_at_creation: false,
        });
        let state_h = graph.import_buffer(
            BufferDescriptor::new(format!("{}/state", r.path), 16, state_usage),
            &state,
        )?;
        let mut words: Vec<u32> = r.geometry.iter().flatten().copied().collect();
        if words.is_empty() {
            words = vec![0; 4];
        }
        let geometry = graph
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(&format!("{}/geometry", r.path)),
                contents: bytemuck::cast_slice(&words),
                usage: BufferUsages::STORAGE,
            });
        let geometry_h = graph.import_buffer(
            BufferDescriptor::new(
                format!("{}/geometry", r.path),
                words.len() as u64 * 4,
                BufferUsages::STORAGE,
            ),
            &geometry,
        )?;
        let args = graph.create_buffer(BufferDescriptor::new(
            format!("{}/indirect", r.path),
            (r.geometry.len().max(1) * 12) as u64,
            BufferUsages::STORAGE | BufferUsages::INDIRECT,
        ))?;
        bufs.push(Bufs {
            state: state_h,
            geometry: geometry_h,
            args,
        });
        out.push(GatedRegion {
            path: r.path.clone(),
            kind: r.kind,
            state,
            dispatches: r.geometry.len(),
            gates: r.gates,
        });
    }
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let shader = ShaderSource::new("program/gate", GATE_WGSL);
    for e in emits {
        match e {
            Emit::Node { node, gate: None } => match *node {
                PrimitiveNode::Dispatch(d) => graph.add_dispatch_node(d)?,
                PrimitiveNode::Copy { id, src, dst } => graph.add_view_copy(id, src, dst)?,
            },
            Emit::Node {
                node,
                gate: Some((r, slot)),
            } => {
                let PrimitiveNode::Dispatch(mut d) = *node else {
                    unreachable!("copies are refused in gated regions")
                };
                let args = graph.create_data_view(
                    bufs[r].args,
                    DataViewDescriptor::packed(VectorFormat::Uint32, 3).at_offset(slot as u64 * 12),
                )?;
                d.grid = Grid::Indirect(args);
                graph.add_dispatch_node(d)?;
            }
            Emit::Gate { id, region, mode } => {
                let r = &regions[region];
                let pred = r.predicate;
                let (parent, has_parent) = match r.parent {
                    Some((p, branch)) => (
                        graph.create_data_view(
                            bufs[p].state,
                            DataViewDescriptor::packed(VectorFormat::Uint32, 1)
                                .at_offset(u64::from(branch) * 4),
                        )?,
                        1,
                    ),
                    None => (pred, 0),
                };
                let params = GateParams {
                    mode,
                    count: r.geometry.len() as u32,
                    pred_off: pred.aligned_range(align).element_offset as u32,
                    parent_off: parent.aligned_range(align).element_offset as u32,
                    has_parent,
                    max_count: graph.device().limits().max_compute_workgroups_per_dimension,
                    pad1: 0,
                    pad2: 0,
                };
                graph.add_dispatch_node(DispatchNode::new(
                    id,
                    shader.clone(),
                    "gate",
                    vec![
                        Binding::params(0, &params),
                        Binding::handle(1, bufs[region].geometry, Access::Read),
                        Binding::read(2, pred),
                        Binding::read(3, parent),
                        Binding::handle(4, bufs[region].state, Access::ReadWrite),
                        Binding::handle(5, bufs[region].args, Access::ReadWrite),
                    ],
                    Grid::Workgroups([1, 1, 1]),
                ))?;
            }
        }
    }
    Ok(out)
}
