//! device.kernel: runs a kernel asset's variant over a domain and returns what it wrote as
//! columns. The variant follows the domain (`COUNT=device` over a live count, `plain` over a
//! number); every binding's value, size and cast is settled before one dispatch node (with its
//! fills, copies and casts) is added to the cook's graph.

use std::collections::BTreeMap;
use std::sync::Arc;

use gpugraph_command::wgpu::Buffer;
use gpugraph_command::{Access as GAccess, Binding, DispatchNode, Grid, Resource, ShaderSource};

use crate::asset::{Access, BindingKind, DispatchShape, KernelAsset, Size, Variant};
use crate::column::{Column, ColumnType, LiveCount, Word};
use crate::cook::{u32_count, Cook};
use crate::count::{CountExpr, CountValue};
use crate::error::{ProcgenError, Result};

/// The `kernel` param: a reference resolved from a literal identity, or (refused) a name.
#[derive(Clone, Debug)]
pub enum KernelRef {
    /// What `asset.resolve("<identity>", "computeShader")` answered.
    Asset(Arc<KernelAsset>),
    /// A bare name, which device.kernel refuses.
    Name(String),
}

/// How many elements run.
#[derive(Clone, Debug)]
pub enum Domain {
    /// A plain number: every slot live.
    Number(u64),
    /// A column's elements: its live count when it carries one (an appended output), else its
    /// capacity.
    Column(Column),
    /// A live count (`{ count = <one-word Column>, capacity = <Number> }`).
    Live(LiveCount),
    /// Arithmetic over counts: growing arithmetic runs over the capacity it can reach and the
    /// kernel reads the count evaluated on the device; arithmetic that takes a count away is
    /// read back here (a planning wait naming this kernel's node) and runs as a number.
    Count(CountExpr),
}

/// What `bind` gives one binding (or one output size name).
#[derive(Clone, Debug)]
pub enum BindValue {
    /// A column for a buffer binding.
    Column(Column),
    /// A table of columns for a columns binding.
    Columns(BTreeMap<String, Column>),
    /// A number, for an output sized by this name.
    Number(u64),
    /// `{ live = <count> }`, for an output sized by this name.
    Live(CountExpr),
}

/// A uniform's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Uniform {
    /// A number.
    Number(f64),
    /// A Bool (1 or 0).
    Bool(bool),
    /// A Vec, spread over `<name>_x` … `<name>_w`.
    Vec(Vec<f64>),
}

/// The inputs of one device.kernel call besides the kernel and domain.
#[derive(Clone, Debug, Default)]
pub struct KernelCall {
    /// One option per specialize parameter (COUNT follows the domain).
    pub specialize: BTreeMap<String, String>,
    /// Binding values by binding name, and output sizes by name.
    pub bind: BTreeMap<String, BindValue>,
    /// Params by name; a name the shader does not declare is refused.
    pub uniforms: BTreeMap<String, Uniform>,
    /// Numbers the shader takes where it declares a param of the name (dt, time, frame).
    pub step: BTreeMap<String, f64>,
    /// Columns every read binding left unbound takes by its own name.
    pub columns: BTreeMap<String, Column>,
    /// The node's name (the dispatch node is `<name>#<n>`; the kernel's identity without one),
    /// which planning waits and graph errors name.
    pub name: Option<String>,
}

/// What device.kernel returns.
#[derive(Clone, Debug, Default)]
pub struct KernelOutputs {
    /// Every binding the shader wrote, by binding name, and `<name>_count` (a one-word UInt
    /// column) for each appended output.
    pub columns: BTreeMap<String, Column>,
    /// The live count of each appended output, by output name.
    pub counts: BTreeMap<String, LiveCount>,
    /// The variant that ran (`COUNT=device …`).
    pub variant: String,
    /// The dispatch node's id in the cook's graph (`procgen/compact#12`).
    pub node: String,
}

/// Names any node may give that a kernel which does not declare them leaves out.
const COMMON: [&str; 3] = ["count", "time", "frame"];

struct Ctx<'a> {
    kernel: &'a str,
    node: String,
    n: u64,
    live: Option<LiveCount>,
    values: BTreeMap<String, f64>,
    bind: &'a BTreeMap<String, BindValue>,
}

impl Ctx<'_> {
    /// A size expression: elements, and the live count they carry (`domain`, a bound live
    /// count), the product evaluated on the device when a live count is in it.
    fn size(&self, cook: &mut Cook, what: &str, size: &Size) -> Result<(u64, Option<LiveCount>)> {
        let expr = match size {
            Size::Number(n) => return Ok((*n, None)),
            Size::Expr(e) => e,
        };
        let mut total = CountExpr::Number(1);
        for term in expr.split('*').map(str::trim) {
            let t = if term == "domain" {
                match &self.live {
                    Some(l) => CountExpr::Count(l.clone()),
                    None => CountExpr::Number(self.n),
                }
            } else if let Ok(n) = term.parse::<u64>() {
                CountExpr::Number(n)
            } else if let Some(b) = self.bind.get(term) {
                match b {
                    BindValue::Number(n) => CountExpr::Number(*n),
                    BindValue::Live(e) => e.clone(),
                    _ => {
                        return Err(ProcgenError::BindKind {
                            kernel: self.kernel.into(),
                            binding: term.into(),
                            expected: "a number or { live = <count> } (it sizes an output)",
                            got: "a column",
                        })
                    }
                }
            } else if let Some(v) = self.values.get(term) {
                if v.fract() != 0.0 || *v < 0.0 {
                    return Err(ProcgenError::ParamValue {
                        kernel: self.kernel.into(),
                        name: term.into(),
                        ty: "u32 (a size)",
                        value: *v,
                    });
                }
                CountExpr::Number(*v as u64)
            } else {
                return Err(ProcgenError::MissingParam {
                    kernel: self.kernel.into(),
                    name: format!("{term} (size of {what})"),
                });
            };
            total = CountExpr::Mul(Box::new(total), Box::new(t));
        }
        let need = format!("the size of `{what}` of {}", self.node);
        Ok(match cook.count_at(&total, &need)? {
            CountValue::Known(n) => (n, None),
            CountValue::Live(l) => (l.capacity, Some(l)),
        })
    }
}

impl Cook {
    /// device.kernel over `domain`; see the module doc and the crate's spec table.
    pub fn kernel(
        &mut self,
        kernel: &KernelRef,
        domain: Domain,
        call: &KernelCall,
    ) -> Result<KernelOutputs> {
        let asset = match kernel {
            KernelRef::Asset(a) => a.clone(),
            KernelRef::Name(n) => return Err(ProcgenError::BareKernelName { name: n.clone() }),
        };
        let id = asset.identity.as_str();
        let node = self.node_id(call.name.as_deref().unwrap_or(id));
        let (n, live) = match domain {
            Domain::Number(n) => (n, None),
            Domain::Count(e) => match self.count_at(&e, &format!("the domain of {node}"))? {
                CountValue::Known(n) => (n, None),
                CountValue::Live(l) => (l.capacity, Some(l)),
            },
            Domain::Column(c) => match c.live {
                Some(l) => (l.capacity, Some(l)),
                None => (c.capacity, None),
            },
            Domain::Live(l) => (l.capacity, Some(l)),
        };
        u32_count(&format!("domain of kernel `{id}`"), n)?;
        let mut spec = call.specialize.clone();
        if asset.schema.specialize.iter().any(|s| s.name == "COUNT") {
            let v = if live.is_some() { "device" } else { "plain" };
            spec.insert("COUNT".into(), v.into());
        }
        let variant = asset.variant(&spec)?;
        if live.is_some() && variant.binding("domain_count").is_none() {
            return Err(ProcgenError::LiveDomainUnsupported { kernel: id.into() });
        }
        let size_names = size_names(&variant);
        for name in call.bind.keys() {
            if variant.binding(name).is_none() && !size_names.contains(name) {
                return Err(ProcgenError::UnknownBinding {
                    kernel: id.into(),
                    name: name.clone(),
                });
            }
        }
        let mut values = param_values(id, &variant, n, call)?;
        // Every bound column's length, before any output is sized from one (`count: src_len`).
        for b in &variant.bindings {
            let c = match call.bind.get(&b.decl.name) {
                Some(BindValue::Column(c)) => Some(c),
                None if b.decl.access == Access::Read => call.columns.get(&b.decl.name),
                _ => None,
            };
            if let Some(c) = c {
                values.insert(format!("{}_len", b.decl.name), c.capacity as f64);
            }
        }
        let mut ctx = Ctx {
            kernel: id,
            node,
            n,
            live: live.clone(),
            values,
            bind: &call.bind,
        };
        self.dispatch(&asset, &variant, &mut ctx, call)
    }

    fn dispatch(
        &mut self,
        asset: &KernelAsset,
        variant: &Variant,
        ctx: &mut Ctx<'_>,
        call: &KernelCall,
    ) -> Result<KernelOutputs> {
        let id = asset.identity.clone();
        let mut bindings: Vec<(u32, Buffer, GAccess)> = Vec::new();
        let mut out = KernelOutputs {
            variant: variant.label.clone(),
            node: ctx.node.clone(),
            ..Default::default()
        };
        let mut counters: BTreeMap<String, LiveCount> = BTreeMap::new();
        // Appended outputs first, so an output that shares a counter finds it.
        let mut order: Vec<_> = variant.bindings.iter().collect();
        order.sort_by_key(|b| (!b.decl.append, b.slot));
        for sb in order {
            let d = &sb.decl;
            let word = d.element.word();
            let lanes = d.lanes();
            if d.name == "domain_count" {
                let word_buf = match &ctx.live {
                    Some(l) => l.word.clone(),
                    None => {
                        self.upload_count("domain_count", u32_count("domain", ctx.n)?)
                            .buffer
                    }
                };
                bindings.push((sb.slot, word_buf, GAccess::Read));
                continue;
            }
            if d.kind == BindingKind::Columns {
                let packed = self.pack_columns(&id, d, call)?;
                bindings.push((sb.slot, packed.0, GAccess::Read));
                ctx.values
                    .insert(format!("{}_stride", d.name), packed.1 as f64);
                // `NAME_col_<column>`: the word offset of each column in the packing, so a
                // kernel that reads its columns by name needs no `order`.
                for (slot, column) in packed.2.iter().enumerate() {
                    ctx.values.insert(
                        format!("{}_col_{column}", d.name),
                        (slot as u64 * packed.1) as f64,
                    );
                }
                continue;
            }
            // A count (or a number) binds its one-word column where the shader reads a count
            // word (`segment_count`, `element_count`): nothing is read back.
            let count_word = d.access == Access::Read && word == Word::U32 && lanes == 1;
            let bound = match call.bind.get(&d.name) {
                Some(BindValue::Column(c)) => Some(c.clone()),
                Some(BindValue::Live(e)) if count_word => {
                    let buf = self.count_word(e, &format!("`{}` of {}", d.name, ctx.node))?;
                    bindings.push((sb.slot, buf, GAccess::Read));
                    continue;
                }
                Some(BindValue::Number(n)) if count_word => {
                    let need = format!("`{}` of {}", d.name, ctx.node);
                    let buf = self.count_word(&CountExpr::Number(*n), &need)?;
                    bindings.push((sb.slot, buf, GAccess::Read));
                    continue;
                }
                Some(other) => {
                    return Err(ProcgenError::BindKind {
                        kernel: id,
                        binding: d.name.clone(),
                        expected: "a Column",
                        got: match other {
                            BindValue::Columns(_) => "a table of columns",
                            BindValue::Number(_) => "a number",
                            _ => "a live count",
                        },
                    })
                }
                None if d.access == Access::Read => call.columns.get(&d.name).cloned(),
                None => None,
            };
            if let Some(c) = &bound {
                if c.lanes != lanes {
                    return Err(ProcgenError::ColumnLength {
                        kernel: id,
                        binding: d.name.clone(),
                        column: format!("{} column of {} lanes", c.ty.name(), c.lanes),
                        got: c.lanes.into(),
                        expected: lanes.into(),
                    });
                }
                ctx.values
                    .insert(format!("{}_len", d.name), c.capacity as f64);
            }
            if !d.access.writes() {
                let Some(c) = bound else {
                    return Err(ProcgenError::Unbound {
                        kernel: id,
                        binding: d.name.clone(),
                    });
                };
                let c = self.cast(&c, word)?;
                bindings.push((sb.slot, c.buffer, GAccess::Read));
                continue;
            }
            // A written binding: a copy of the bound column (cast to the binding's words), or
            // an output allocated for its stated size.
            let (capacity, size_live) = match (&bound, d.capacity.as_ref().or(d.count.as_ref())) {
                (_, Some(size)) => {
                    let (cap, l) = ctx.size(self, &d.name, size)?;
                    (bound.as_ref().map_or(cap, |b| cap.max(b.capacity)), l)
                }
                (Some(b), None) => (b.capacity, b.live.clone().filter(|_| d.live)),
                (None, None) => {
                    return Err(ProcgenError::OutputUnsized {
                        kernel: id,
                        binding: d.name.clone(),
                    })
                }
            };
            let ty = ColumnType::of(word, lanes);
            let mut col = self.alloc(&d.name, ty, lanes, capacity);
            if let Some(f) = d.fill {
                let bits = word.bits_of(f).unwrap_or(0);
                self.fill(&col.buffer, col.words(), bits)?;
            }
            if let Some(b) = &bound {
                self.copy_cast(
                    &b.buffer,
                    &col.buffer,
                    b.words().min(col.words()),
                    b.element(),
                    word,
                )?;
            }
            ctx.values
                .insert(format!("{}_capacity", d.name), capacity as f64);
            if d.append {
                let counter = self.alloc(&format!("{}_count", d.name), ColumnType::UInt, 1, 1);
                match bound.as_ref().and_then(|b| b.live.as_ref()) {
                    // Appending after what an earlier pass appended: the copy keeps its count.
                    Some(l) => self.copy_cast(&l.word, &counter.buffer, 1, Word::U32, Word::U32)?,
                    None => self.fill(&counter.buffer, 1, 0)?,
                }
                let lc = LiveCount {
                    word: counter.buffer.clone(),
                    capacity,
                };
                let slot = variant
                    .counters
                    .iter()
                    .find(|(o, _)| o == &d.name)
                    .map(|(_, s)| *s)
                    .expect("variant checked every appended output's counter");
                bindings.push((slot, counter.buffer.clone(), GAccess::ReadWrite));
                col.live = Some(lc.clone());
                counters.insert(d.name.clone(), lc.clone());
                out.counts.insert(d.name.clone(), lc);
                out.columns.insert(format!("{}_count", d.name), counter);
            } else if let Some(c) = &d.counter {
                let lc = counters
                    .get(c)
                    .cloned()
                    .expect("appended outputs are bound first");
                col.live = Some(LiveCount { capacity, ..lc });
            } else if d.live {
                col.live = size_live.or_else(|| ctx.live.clone());
            }
            bindings.push((sb.slot, col.buffer.clone(), GAccess::ReadWrite));
            out.columns.insert(d.name.clone(), col);
        }
        let params = pack_params(&id, variant, &ctx.values)?;
        let mut node_bindings = Vec::new();
        for (slot, buf, access) in bindings {
            let h = self.handle(&buf)?;
            node_bindings.push(Binding::handle(slot, h, access));
        }
        if let (Some(slot), false) = (variant.params_slot, params.is_empty()) {
            node_bindings.push(Binding {
                slot,
                resource: Resource::Params(params),
                access: GAccess::Uniform,
            });
        }
        let grid = match asset.schema.dispatch {
            DispatchShape::Single => Grid::Workgroups([1, 1, 1]),
            DispatchShape::Rows => Grid::Rows {
                rows: ctx.n,
                rows_per_workgroup: asset.schema.workgroup_size,
            },
        };
        let d = DispatchNode::new(
            ctx.node.clone(),
            ShaderSource::new(format!("{id} [{}]", variant.label), variant.wgsl.clone()),
            asset.schema.entry.clone(),
            node_bindings,
            grid,
        );
        self.graph.add_dispatch_node(d)?;
        Ok(out)
    }

    /// The one-word column a count-word binding reads: a live count's own word, or a word
    /// holding a known number (a shrinking count is read back for `need` first).
    fn count_word(&mut self, e: &CountExpr, need: &str) -> Result<Buffer> {
        Ok(match self.count_at(e, need)? {
            CountValue::Live(l) => l.word,
            CountValue::Known(n) => self.upload_count("count word", u32_count(need, n)?).buffer,
        })
    }

    /// Packs a columns binding's table into one buffer: slot `s` holds the `s`-th column of the
    /// stated order (sorted names without one), each `stride` words. Returns the buffer, the
    /// stride and the column names in slot order.
    fn pack_columns(
        &mut self,
        id: &str,
        d: &crate::asset::BindingDecl,
        call: &KernelCall,
    ) -> Result<(Buffer, u64, Vec<String>)> {
        let table: BTreeMap<String, Column> = match call.bind.get(&d.name) {
            Some(BindValue::Columns(t)) => t.clone(),
            Some(_) => {
                return Err(ProcgenError::BindKind {
                    kernel: id.into(),
                    binding: d.name.clone(),
                    expected: "a table of columns",
                    got: "a single value",
                })
            }
            None => call.columns.clone(),
        };
        let names: Vec<String> = match &d.order {
            Some(order) => {
                let want: Vec<String> = order.split_whitespace().map(String::from).collect();
                let mut sorted = want.clone();
                sorted.sort();
                if sorted != table.keys().cloned().collect::<Vec<_>>() {
                    return Err(ProcgenError::ColumnsOrder {
                        kernel: id.into(),
                        binding: d.name.clone(),
                        order: order.clone(),
                        got: table.keys().cloned().collect::<Vec<_>>().join(" "),
                    });
                }
                want
            }
            None => table.keys().cloned().collect(),
        };
        let stride = names.first().map_or(0, |n| table[n].words());
        for name in &names {
            if table[name].words() != stride {
                return Err(ProcgenError::ColumnLength {
                    kernel: id.into(),
                    binding: d.name.clone(),
                    column: name.clone(),
                    got: table[name].words(),
                    expected: stride,
                });
            }
        }
        let word = d.element.word();
        let packed = self.alloc(
            &d.name,
            ColumnType::of(word, 1),
            1,
            stride * names.len() as u64,
        );
        for (s, name) in names.iter().enumerate().filter(|_| stride > 0) {
            let c = self.cast(&table[name], word)?;
            let h_src = self.handle(&c.buffer)?;
            let h_dst = self.handle(&packed.buffer)?;
            let sv = self.graph.create_packed_view(
                h_src,
                gpugraph_command::VectorFormat::Uint32,
                stride,
            )?;
            let dv = self.graph.create_data_view(
                h_dst,
                gpugraph_command::DataViewDescriptor {
                    format: gpugraph_command::VectorFormat::Uint32,
                    length: stride,
                    byte_offset: s as u64 * stride * 4,
                    byte_stride: None,
                },
            )?;
            let node = self.node_id("procgen/pack");
            self.graph.add_view_copy(node, sv, dv)?;
        }
        Ok((packed.buffer, stride, names))
    }
}

/// Names outputs take their size from (terms of count/capacity expressions).
fn size_names(variant: &Variant) -> Vec<String> {
    variant
        .bindings
        .iter()
        .flat_map(|b| [b.decl.count.as_ref(), b.decl.capacity.as_ref()])
        .flatten()
        .filter_map(|s| match s {
            Size::Expr(e) => Some(
                e.split('*')
                    .map(|t| t.trim().to_string())
                    .collect::<Vec<_>>(),
            ),
            Size::Number(_) => None,
        })
        .flatten()
        .collect()
}

/// The values of the variant's params from `n`, uniforms (refusing undeclared names) and step.
fn param_values(
    id: &str,
    variant: &Variant,
    n: u64,
    call: &KernelCall,
) -> Result<BTreeMap<String, f64>> {
    let declared = |name: &str| variant.params.iter().any(|p| p.name == name);
    let mut values = BTreeMap::new();
    values.insert("n".to_string(), n as f64);
    for (name, u) in &call.uniforms {
        // `n` is the ABI's own (the dispatch size): a node cannot give it.
        if name == "n" {
            return Err(ProcgenError::UnknownUniform {
                kernel: id.into(),
                name: name.clone(),
            });
        }
        match u {
            Uniform::Number(_) | Uniform::Bool(_) if !declared(name) => {
                if !COMMON.contains(&name.as_str()) {
                    return Err(ProcgenError::UnknownUniform {
                        kernel: id.into(),
                        name: name.clone(),
                    });
                }
            }
            Uniform::Number(v) => {
                values.insert(name.clone(), *v);
            }
            Uniform::Bool(b) => {
                values.insert(name.clone(), f64::from(u8::from(*b)));
            }
            Uniform::Vec(vs)
                if vs.len() <= 4
                    && ["x", "y", "z", "w"][..vs.len()]
                        .iter()
                        .any(|c| declared(&format!("{name}_{c}"))) =>
            {
                for (v, c) in vs.iter().zip(["x", "y", "z", "w"]) {
                    values.insert(format!("{name}_{c}"), *v);
                }
            }
            _ => {
                return Err(ProcgenError::UnknownUniform {
                    kernel: id.into(),
                    name: name.clone(),
                })
            }
        }
    }
    for (name, v) in &call.step {
        if declared(name) && !call.uniforms.contains_key(name) {
            values.insert(name.clone(), *v);
        }
    }
    Ok(values)
}

/// The `params` struct bytes: each declared param's value as its word, in declaration order.
fn pack_params(id: &str, variant: &Variant, values: &BTreeMap<String, f64>) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(variant.params.len() * 4);
    for p in &variant.params {
        let Some(v) = values.get(&p.name) else {
            return Err(ProcgenError::MissingParam {
                kernel: id.into(),
                name: p.name.clone(),
            });
        };
        let bits = p.ty.bits_of(*v).ok_or_else(|| ProcgenError::ParamValue {
            kernel: id.into(),
            name: p.name.clone(),
            ty: p.ty.wgsl(),
            value: *v,
        })?;
        bytes.extend_from_slice(&bits.to_le_bytes());
    }
    Ok(bytes)
}
