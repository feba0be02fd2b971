//! The upload of `analyze`: every loaded column, one after the other.
//!
//! Columns go one at a time because each upload already uses every core (its chunks convert
//! straight into staging on the thread pool, `gpugraph_arrow`'s staged upload) and the bus is
//! shared: on the H200 three columns uploading at once ran slower (each made its own staging
//! ring) than the three in turn. The first failing column in schema order is the error.

use std::collections::HashMap;

use anyhow::{bail, Result};
use arrow_array::Array;
use gpugraph_arrow::{
    mask_transfer, mask_transfer_bytes, upload_array_chunks, GpuColumn, MaskTransfer, UploadOptions,
};
use gpugraph_command::GpuContext;

use super::load::Loaded;

/// The uploaded columns of a loaded table, by name, with the rows of each record batch.
pub struct Uploaded {
    columns: HashMap<String, GpuColumn>,
    batch_rows: Vec<u64>,
    mask_transfer: MaskTransfer,
}

impl Uploaded {
    /// The uploaded column `name`; an error naming it when it was not loaded.
    pub fn column(&self, name: &str) -> Result<&GpuColumn> {
        match self.columns.get(name) {
            Some(c) => Ok(c),
            None => bail!("column '{name}' was not uploaded"),
        }
    }

    /// The strings of a dictionary-coded column (`None` for other columns).
    pub fn dictionary(&self, name: &str) -> Result<Option<&[String]>> {
        Ok(self.column(name)?.dictionary.as_deref().map(Vec::as_slice))
    }

    /// Bytes moved host → device: every column's values and validity masks.
    pub fn bytes(&self) -> u64 {
        let vector = |v: &gpugraph_tables::GpuVector| v.len() * u64::from(v.format().byte_size());
        self.columns
            .values()
            .map(|c| vector(&c.values) + c.validity.as_ref().map_or(0, vector))
            .sum()
    }

    /// Bytes that crossed the bus: values, and masks as bitmaps or words (see
    /// [`MaskTransfer`]).
    pub fn bus_bytes(&self) -> u64 {
        let vector = |v: &gpugraph_tables::GpuVector| v.len() * u64::from(v.format().byte_size());
        self.columns
            .values()
            .map(|c| {
                vector(&c.values)
                    + c.validity.as_ref().map_or(0, |m| {
                        self.batch_rows
                            .iter()
                            .map(|&r| mask_transfer_bytes(r, self.mask_transfer))
                            .sum::<u64>()
                            .min(vector(m))
                    })
            })
            .sum()
    }

    /// Rows of each record batch (= chunk of every column), in order.
    pub fn batch_rows(&self) -> &[u64] {
        &self.batch_rows
    }
}

/// Uploads every column of `loaded` with `options`, in schema order.
pub fn upload(ctx: &GpuContext, loaded: &Loaded, options: &UploadOptions) -> Result<Uploaded> {
    let mut columns = HashMap::with_capacity(loaded.schema.fields().len());
    for (i, field) in loaded.schema.fields().iter().enumerate() {
        let chunks: Vec<&dyn Array> = loaded
            .batches
            .iter()
            .map(|b| b.column(i).as_ref())
            .collect();
        let column = upload_array_chunks(ctx, field.name(), field.data_type(), &chunks, options)?;
        columns.insert(field.name().clone(), column);
    }
    let batch_rows: Vec<u64> = loaded.batches.iter().map(|b| b.num_rows() as u64).collect();
    Ok(Uploaded {
        columns,
        mask_transfer: mask_transfer(&ctx.device, &batch_rows, options.mask_transfer),
        batch_rows,
    })
}
