//! [`RowGather`]: output row j = source row `indices[j]`, for the join's right rows and the
//! CLI's payload columns (rows of 1, 2 or 4 u32 words: 32-, 64- and 128-bit values).

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, VectorFormat, VectorView,
};

use super::source::{gather_source, keyed, GatherParams};
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_packed, Binder, ViewCheck, IN_PLACE};

const ALGORITHM: &str = "row gather";

/// Gathers rows: `output[j] = source[indices[j]]` (each row `width` u32 words) for
/// `j < min(count, indices.len())`; an index equal to [`super::MISS`] or past the source
/// writes zero words, and when `valid_out` is given, row j's flag is 1 for a hit whose source
/// row is valid (`source_valid`, when given) and 0 otherwise (a left join's nulls).
///
/// Contract: `indices` one packed u32 view, which may carry a live count (the join's count:
/// rows past it are untouched); `source` packed u32 words, `width × rows` of them; `output`
/// `width × indices.len()` words; `valid_out` `indices.len()` rows; `source_valid` the
/// source's rows. `width` in 1..=4. Written views share no buffer with read ones.
#[derive(Clone, Debug)]
pub struct RowGather {
    /// Node id.
    pub id: String,
    /// Row indices into the source.
    pub indices: DataView,
    /// The source rows, `width` packed u32 words each.
    pub source: DataView,
    /// Words per row, 1..=4.
    pub width: u32,
    /// The gathered rows.
    pub output: DataView,
    /// Optional source validity flags (nonzero = valid), one per source row.
    pub source_valid: Option<DataView>,
    /// Optional output validity flags, one per output row.
    pub valid_out: Option<DataView>,
}

impl RowGather {
    /// Validates and adds node `{id}` (256 invocations per workgroup).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        if !(1..=4).contains(&self.width) {
            return Err(c.out_of_range("width", self.width, "in 1..=4 words"));
        }
        let live = self.indices.live_count();
        let indices = self.indices.without_live_count();
        let w = u64::from(self.width);
        let check = |what: &str, v: &DataView| {
            require_packed(c, what, &VectorView::from(*v), VectorFormat::Uint32)
        };
        check("indices", &indices)?;
        check("source", &self.source)?;
        check("output", &self.output)?;
        if !self.source.len().is_multiple_of(w) {
            return Err(c.out_of_range(
                "the source length in words",
                self.source.len(),
                format!("a multiple of the width {w}"),
            ));
        }
        let source_rows = self.source.len() / w;
        if self.output.len() != indices.len() * w {
            return Err(c.length(
                "output",
                "words",
                self.output.len(),
                indices.len() * w,
                format!("{} indices of width {w}", indices.len()),
            ));
        }
        if let Some(v) = &self.valid_out {
            check("valid_out", v)?;
            if v.len() != indices.len() {
                return Err(c.length("valid_out", "rows", v.len(), indices.len(), "the indices"));
            }
        }
        if let Some(v) = &self.source_valid {
            check("source_valid", v)?;
            if v.len() != source_rows {
                return Err(c.length(
                    "source_valid",
                    "rows",
                    v.len(),
                    source_rows,
                    "the source rows",
                ));
            }
        }
        let mut written = vec![("output", VectorView::from(self.output))];
        if let Some(v) = self.valid_out {
            written.push(("valid_out", v.into()));
        }
        let mut reads = vec![
            ("indices", VectorView::from(indices)),
            ("source", self.source.into()),
        ];
        if let Some(v) = self.source_valid {
            reads.push(("source_valid", v.into()));
        }
        if let Some(l) = live {
            reads.push(("live count", l.into()));
        }
        let wr: Vec<(&str, &VectorView)> = written.iter().map(|(n, v)| (*n, v)).collect();
        let rd: Vec<(&str, &VectorView)> = reads.iter().map(|(n, v)| (*n, v)).collect();
        check_writes_alone(graph, c, &wr, &rd, IN_PLACE)?;
        if indices.is_empty() {
            return Ok(());
        }
        let binder = Binder::new(&graph.device().limits());
        let rows = u32::try_from(indices.len())
            .map_err(|_| c.device_limit("index rows", indices.len(), u64::from(u32::MAX)))?;
        let source_rows = u32::try_from(source_rows)
            .map_err(|_| c.device_limit("source rows", source_rows, u64::from(u32::MAX)))?;
        let mut params = GatherParams {
            capacity: rows,
            index_offset: binder.offset(c, "indices", &indices)?,
            source_offset: binder.offset(c, "source", &self.source)?,
            output_offset: binder.offset(c, "output", &self.output)?,
            source_rows,
            ..GatherParams::default()
        };
        if let Some(l) = &live {
            params.count_offset = binder.offset(c, "live count", l)?;
        }
        if let Some(v) = &self.valid_out {
            params.valid_offset = binder.offset(c, "valid_out", v)?;
        }
        if let Some(v) = &self.source_valid {
            params.source_valid_offset = binder.offset(c, "source_valid", v)?;
        }
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, indices),
            Binding::read(2, self.source),
            Binding::read_write(3, self.output),
        ];
        if let Some(l) = live {
            bindings.push(Binding::read(4, l));
        }
        if let Some(v) = self.valid_out {
            bindings.push(Binding::read_write(5, v));
        }
        // Source flags only matter where output flags are written.
        let source_valid = self.source_valid.filter(|_| self.valid_out.is_some());
        if let Some(v) = source_valid {
            bindings.push(Binding::read(6, v));
        }
        const WG: u32 = 256;
        graph.add_dispatch_node(DispatchNode::new(
            self.id,
            keyed(
                "hash/gather",
                &gather_source(
                    WG,
                    self.width,
                    live.is_some(),
                    self.valid_out.is_some(),
                    source_valid.is_some(),
                ),
            ),
            "gather",
            bindings,
            Grid::Rows {
                rows: indices.len(),
                rows_per_workgroup: WG,
            },
        ))?;
        Ok(())
    }
}
