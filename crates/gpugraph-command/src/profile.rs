//! Per-node GPU timestamps: one pass per timed node, begin/end timestamp writes, resolved into
//! a staging buffer at the end of the encode and read back only on request.

/// GPU time of one node from a profiled encode.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NodeTiming {
    /// Node id.
    pub node: String,
    /// Nanoseconds between the pass's begin and end timestamps; `None` for copy nodes, which
    /// run outside passes.
    pub gpu_ns: Option<f64>,
    /// The pass's begin timestamp in nanoseconds of the device's timestamp clock (its origin
    /// is the device's: compare it only with other nodes of the same submission, e.g. for the
    /// span from the first node's start to the last one's end); `None` for copy nodes.
    pub start_ns: Option<f64>,
}

/// wgpu caps one query set at 4096 queries.
const QUERIES_PER_SET: u32 = 4096;

pub(crate) struct Profiler {
    sets: Vec<wgpu::QuerySet>,
    /// Per compiled node: first of its two query indices (global), if timed.
    base: Vec<Option<u32>>,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    query_count: u32,
    resolved: bool,
}

impl Profiler {
    pub(crate) fn new(device: &wgpu::Device, graph: &str, timed: &[bool]) -> Self {
        let mut base = Vec::with_capacity(timed.len());
        let mut next = 0u32;
        for &t in timed {
            base.push(t.then_some(next));
            if t {
                next += 2;
            }
        }
        let query_count = next.max(2);
        let set_count = query_count.div_ceil(QUERIES_PER_SET);
        let sets = (0..set_count)
            .map(|s| {
                device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some(&format!("{graph}: timestamps {s}")),
                    ty: wgpu::QueryType::Timestamp,
                    count: (query_count - s * QUERIES_PER_SET).min(QUERIES_PER_SET),
                })
            })
            .collect();
        let bytes = set_count as u64 * QUERIES_PER_SET as u64 * 8;
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{graph}: timestamp resolve")),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{graph}: timestamp staging")),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self {
            sets,
            base,
            resolve,
            staging,
            query_count,
            resolved: false,
        }
    }

    fn slot(&self, node: usize) -> Option<(&wgpu::QuerySet, u32)> {
        let q = self.base.get(node).copied().flatten()?;
        Some((
            &self.sets[(q / QUERIES_PER_SET) as usize],
            q % QUERIES_PER_SET,
        ))
    }

    pub(crate) fn compute_writes(&self, node: usize) -> wgpu::ComputePassTimestampWrites<'_> {
        let (set, q) = self.slot(node).unwrap_or((&self.sets[0], 0));
        wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(q),
            end_of_pass_write_index: Some(q + 1),
        }
    }

    pub(crate) fn render_writes(&self, node: usize) -> wgpu::RenderPassTimestampWrites<'_> {
        let (set, q) = self.slot(node).unwrap_or((&self.sets[0], 0));
        wgpu::RenderPassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(q),
            end_of_pass_write_index: Some(q + 1),
        }
    }

    pub(crate) fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) {
        for (s, set) in self.sets.iter().enumerate() {
            let count = (self.query_count - s as u32 * QUERIES_PER_SET).min(QUERIES_PER_SET);
            encoder.resolve_query_set(
                set,
                0..count,
                &self.resolve,
                s as u64 * QUERIES_PER_SET as u64 * 8,
            );
        }
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.staging, 0, self.resolve.size());
        self.resolved = true;
    }

    pub(crate) fn read(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        ids: &[String],
    ) -> Result<Vec<NodeTiming>, String> {
        if !self.resolved {
            return Err("no profiled encode was recorded".into());
        }
        let slice = self.staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| format!("device poll failed: {e}"))?;
        rx.recv()
            .map_err(|_| "map callback never ran".to_string())?
            .map_err(|e| format!("mapping the timestamp staging buffer failed: {e}"))?;
        let bytes = {
            let data = slice.get_mapped_range().map_err(|e| format!("{e}"))?;
            data[..self.ticks_bytes() as usize].to_vec()
        };
        self.staging.unmap();
        self.timings(queue, ids, &bytes)
    }

    /// The resolve buffer and the bytes of it that hold this profiler's ticks, once an
    /// encode resolved them.
    pub(crate) fn ticks(&self) -> Option<(&wgpu::Buffer, u64)> {
        self.resolved.then_some((&self.resolve, self.ticks_bytes()))
    }

    fn ticks_bytes(&self) -> u64 {
        u64::from(self.query_count) * 8
    }

    /// The timings of nodes `ids` from `bytes`, the resolved ticks ([`Self::ticks`]).
    pub(crate) fn timings(
        &self,
        queue: &wgpu::Queue,
        ids: &[String],
        bytes: &[u8],
    ) -> Result<Vec<NodeTiming>, String> {
        if (bytes.len() as u64) < self.ticks_bytes() {
            return Err(format!(
                "{} bytes of timestamps, the graph resolved {}",
                bytes.len(),
                self.ticks_bytes()
            ));
        }
        let period = queue.get_timestamp_period() as f64;
        let ticks: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        Ok(ids
            .iter()
            .enumerate()
            .map(|(n, id)| NodeTiming {
                node: id.clone(),
                gpu_ns: self.base.get(n).copied().flatten().map(|q| {
                    let (a, b) = (ticks[q as usize], ticks[q as usize + 1]);
                    b.saturating_sub(a) as f64 * period
                }),
                start_ns: self
                    .base
                    .get(n)
                    .copied()
                    .flatten()
                    .map(|q| ticks[q as usize] as f64 * period),
            })
            .collect())
    }
}
