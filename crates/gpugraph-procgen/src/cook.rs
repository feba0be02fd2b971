//! A cook: one command graph that the ops of a graph add their nodes to, over device columns
//! the cook allocates (imported buffers, so columns outlive the graph and a recording can
//! replay them), compiled once into a [`Recording`].

use bytemuck::Pod;
use gpugraph_command::wgpu::{self, util::DeviceExt, BufferUsages};
use gpugraph_command::{
    Access, Binding, BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DispatchNode,
    GpuContext, Grid, ShaderSource, VectorFormat,
};

use crate::column::{column_bytes, Column, ColumnType, LiveCount, Word};
use crate::error::{ProcgenError, Result};
pub use crate::submit::read_words;
pub(crate) use crate::submit::{submit, u32_count};
use crate::wait::{PlanWait, Segment};

const FILL_WGSL: &str = include_str!("../assets/internal/fill.wgsl");
const CAST_WGSL: &str = include_str!("../assets/internal/cast.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, bytemuck::Zeroable)]
struct FillParams {
    n: u32,
    value: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, bytemuck::Zeroable)]
struct CastParams {
    n: u32,
    mode: u32,
}

/// How a recorded count guard is read after a replay.
#[derive(Clone, Debug)]
pub struct GuardWord {
    /// The bound's or guard's name.
    pub name: String,
    /// Two words: the flag (nonzero: ran past the guard) and, for a bound, the true count.
    pub buffer: wgpu::Buffer,
    /// The room the recording allocated (bounds), 0 for a device.guard.
    pub room: u64,
}

/// A count a later cook must measure before it can record (a device.bound with no capacity and
/// no room measured yet).
#[derive(Clone, Debug)]
pub struct Measure {
    /// The bound's name.
    pub name: String,
    /// The count word to read.
    pub word: wgpu::Buffer,
}

/// A number a recording holds on the device as a live count (device.bound with `live`): a
/// replay takes a new number inside its room by writing the word.
#[derive(Clone, Debug)]
pub struct LiveNumber {
    /// The bound's name.
    pub name: String,
    /// The one-word count column.
    pub word: wgpu::Buffer,
    /// The room allocated for it: the next power of two at or above the recorded number.
    pub room: u64,
    /// The number the word holds now.
    pub value: u64,
}

/// The device ops of one cook, added to one command graph.
pub struct Cook {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) graph: CommandGraph,
    nodes: usize,
    poison: Option<u32>,
    pub(crate) rooms: std::collections::BTreeMap<String, u64>,
    pub(crate) guards: Vec<GuardWord>,
    pub(crate) measure: Option<Measure>,
    pub(crate) live_numbers: Vec<LiveNumber>,
    /// Where the plan waited on the device (count arithmetic read back, measured rooms).
    pub waits: Vec<String>,
    /// The recording so far that ends in planning waits (see [`crate::wait`]).
    pub(crate) segments: Vec<Segment>,
}

impl Cook {
    /// An empty cook on `ctx`'s device.
    pub fn new(ctx: &GpuContext, id: &str) -> Self {
        Self::on(&ctx.device, &ctx.queue, id)
    }

    /// An empty cook on `device`.
    pub fn on(device: &wgpu::Device, queue: &wgpu::Queue, id: &str) -> Self {
        Self {
            device: device.clone(),
            queue: queue.clone(),
            graph: CommandGraph::new(id, device),
            nodes: 0,
            poison: None,
            rooms: Default::default(),
            guards: Vec::new(),
            measure: None,
            live_numbers: Vec::new(),
            waits: Vec::new(),
            segments: Vec::new(),
        }
    }

    /// Fill every output allocated from now on with `word` when it is created (tests poison
    /// outputs so an unwritten slot shows).
    pub fn set_poison(&mut self, word: Option<u32>) {
        self.poison = word;
    }

    /// A fresh node id with `what` in it.
    pub(crate) fn node_id(&mut self, what: &str) -> String {
        self.nodes += 1;
        format!("{}#{}", what, self.nodes)
    }

    /// A new column of `capacity` elements × `lanes` words, poisoned when the cook poisons.
    pub(crate) fn alloc(
        &mut self,
        label: &str,
        ty: ColumnType,
        lanes: u32,
        capacity: u64,
    ) -> Column {
        let words = capacity * u64::from(lanes);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: column_bytes(words),
            usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(p) = self.poison {
            let fill = vec![p; (column_bytes(words) / 4) as usize];
            self.queue
                .write_buffer(&buffer, 0, bytemuck::cast_slice(&fill));
        }
        Column {
            buffer,
            ty,
            lanes,
            capacity,
            live: None,
            text: None,
        }
    }

    /// transfer.upload of raw words: a column of `ty` (its lanes) holding `words`.
    pub fn upload_words(&mut self, label: &str, ty: ColumnType, words: &[u32]) -> Column {
        let lanes = ty.lanes();
        let mut bytes: Vec<u8> = bytemuck::cast_slice(words).to_vec();
        bytes.resize(column_bytes(words.len() as u64) as usize, 0);
        let buffer = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &bytes,
                usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
            });
        Column {
            buffer,
            ty,
            lanes,
            capacity: words.len() as u64 / u64::from(lanes),
            live: None,
            text: None,
        }
    }

    /// A one-word count column holding `n` (a count the device holds from now on).
    pub fn upload_count(&mut self, label: &str, n: u32) -> Column {
        self.upload_words(label, ColumnType::UInt, &[n])
    }

    /// The graph handle of `buffer`, importing it the first time.
    pub(crate) fn handle(&mut self, buffer: &wgpu::Buffer) -> Result<BufferHandle> {
        if let Some(h) = self.graph.imported_handle(buffer) {
            return Ok(h);
        }
        let id = self.node_id("buffer");
        Ok(self.graph.import_buffer(
            BufferDescriptor::new(id, buffer.size(), buffer.usage()),
            buffer,
        )?)
    }

    /// A one-workgroup-per-64 dispatch of an internal kernel with `params` at slot 0 and
    /// `buffers` at slots 1.. .
    pub(crate) fn internal<P: Pod>(
        &mut self,
        key: &str,
        wgsl: &str,
        params: &P,
        buffers: &[(&wgpu::Buffer, Access)],
        grid: Grid,
    ) -> Result<()> {
        let mut bindings = vec![Binding::params(0, params)];
        for (i, (b, access)) in buffers.iter().enumerate() {
            let h = self.handle(b)?;
            bindings.push(Binding::handle(i as u32 + 1, h, *access));
        }
        let id = self.node_id(key);
        self.graph.add_dispatch_node(DispatchNode::new(
            id,
            ShaderSource::new(key, wgsl),
            "main",
            bindings,
            grid,
        ))?;
        Ok(())
    }

    /// Writes `value` to the first `words` words of `buffer` on every run of the recording.
    pub(crate) fn fill(&mut self, buffer: &wgpu::Buffer, words: u64, value: u32) -> Result<()> {
        let n = u32_count("words filled", words)?;
        self.internal(
            "procgen/fill",
            FILL_WGSL,
            &FillParams { n, value },
            &[(buffer, Access::ReadWrite)],
            Grid::Rows {
                rows: words,
                rows_per_workgroup: 64,
            },
        )
    }

    /// Copies the first `words` words of `src` into `dst`, cast by value from `from` to `to`.
    pub(crate) fn copy_cast(
        &mut self,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        words: u64,
        from: Word,
        to: Word,
    ) -> Result<()> {
        if words == 0 {
            return Ok(());
        }
        if from == to {
            let (s, d) = (self.handle(src)?, self.handle(dst)?);
            let sv = self
                .graph
                .create_packed_view(s, VectorFormat::Uint32, words)?;
            let dv = self
                .graph
                .create_packed_view(d, VectorFormat::Uint32, words)?;
            let id = self.node_id("procgen/copy");
            self.graph.add_view_copy(id, sv, dv)?;
            return Ok(());
        }
        let mode = cast_mode(from, to);
        let n = u32_count("words cast", words)?;
        self.internal(
            "procgen/cast",
            CAST_WGSL,
            &CastParams { n, mode },
            &[(src, Access::Read), (dst, Access::ReadWrite)],
            Grid::Rows {
                rows: words,
                rows_per_workgroup: 64,
            },
        )
    }

    /// `column` as words of `to`: the column itself when its words already are, else a copy
    /// cast by value (see `cast.wgsl`) typed as `to` writes.
    pub fn cast(&mut self, column: &Column, to: Word) -> Result<Column> {
        if column.element() == to {
            return Ok(column.clone());
        }
        let ty = ColumnType::of(to, column.lanes);
        let out = self.alloc("procgen/cast", ty, column.lanes, column.capacity);
        self.copy_cast(
            &column.buffer,
            &out.buffer,
            column.words(),
            column.element(),
            to,
        )?;
        Ok(Column {
            live: column.live.clone(),
            ..out
        })
    }

    /// device.live: `values` carrying `count` as its live count.
    pub fn live(&self, values: &Column, count: LiveCount) -> Column {
        values.with_live(count)
    }

    /// Compiles the cook into a recording: one compiled command graph, or, where the plan
    /// read a count back, the segments before each planning wait and the graph after the last.
    pub fn finish(self) -> Result<Recording> {
        Ok(Recording {
            segments: self.segments,
            compiled: self.graph.compile()?,
            device: self.device,
            queue: self.queue,
            guards: self.guards,
            live_numbers: self.live_numbers,
            waits: self.waits,
            replays: 0,
        })
    }
}

/// The cast mode of `cast.wgsl`.
fn cast_mode(from: Word, to: Word) -> u32 {
    match (from, to) {
        (Word::F32, Word::I32) => 1,
        (Word::F32, Word::U32) => 2,
        (Word::I32, Word::F32) => 3,
        (Word::U32, Word::F32) => 4,
        (Word::I32, Word::U32) => 5,
        (Word::U32, Word::I32) => 6,
        _ => 0,
    }
}

/// What one run of a recording did.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// The planning waits it made, each as the play report names it, in order.
    pub waits: Vec<String>,
    /// A wait whose count is no longer the number the plan was made with (the wait as planned,
    /// and the number read now): the run stopped there and the cook must be planned again.
    pub replan: Option<(PlanWait, u64)>,
}

/// A compiled cook: its GPU work recorded once, replayed by every later run.
pub struct Recording {
    segments: Vec<Segment>,
    compiled: CompiledGraph,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Guard words the recording holds.
    pub guards: Vec<GuardWord>,
    /// Live numbers the recording runs over.
    pub live_numbers: Vec<LiveNumber>,
    /// Where the recording's plan waited.
    pub waits: Vec<String>,
    /// Runs so far.
    pub replays: u64,
}

impl Recording {
    /// Runs the recording: each segment is submitted and its planning wait read again (the
    /// count the dispatch after it needs); when a count still comes to the number the plan was
    /// made with the run goes on, else it stops and names the wait in [`Run::replan`] (the
    /// graph after it was planned for another number). Then the last graph.
    pub fn run(&mut self) -> Result<Run> {
        let mut run = Run::default();
        self.replays += 1;
        for seg in &mut self.segments {
            if let Some(g) = seg.graph.as_mut() {
                submit(&self.device, &self.queue, g)?;
            }
            let value = seg.wait.read(&self.device, &self.queue)?;
            run.waits.push(seg.wait.describe(value));
            if value != seg.wait.value {
                run.replan = Some((seg.wait.clone(), value));
                return Ok(run);
            }
        }
        submit(&self.device, &self.queue, &mut self.compiled)?;
        Ok(run)
    }

    /// The planning waits the recording holds, in order.
    pub fn plan_waits(&self) -> impl Iterator<Item = &PlanWait> {
        self.segments.iter().map(|s| &s.wait)
    }

    /// The live count `l` of `what`, read back for a node that states a bound: a count above
    /// the capacity is refused with the overflow (count − capacity), the slots that did not fit.
    pub fn checked_count(&self, what: &str, l: &LiveCount) -> Result<u64> {
        let count = u64::from(self.read_words(&l.word, 1)?[0]);
        if count > l.capacity {
            return Err(ProcgenError::Overflow {
                what: what.into(),
                count,
                capacity: l.capacity,
                overflow: count - l.capacity,
            });
        }
        Ok(count)
    }

    /// Reads the first `words` words of `buffer` (waits for the device).
    pub fn read_words(&self, buffer: &wgpu::Buffer, words: u64) -> Result<Vec<u32>> {
        read_words(&self.device, &self.queue, buffer, words)
    }
}
