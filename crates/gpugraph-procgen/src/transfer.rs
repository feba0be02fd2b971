//! transfer.upload and transfer.readback: CPU numbers, lists and typed tables to device
//! columns, and device columns and live counts back to CPU values.

use std::collections::BTreeMap;

use crate::column::{Column, ColumnType, LiveCount};
use crate::cook::{read_words, Cook, Recording};
use crate::error::{ProcgenError, Result};

/// One value of transfer.upload's `values` record.
#[derive(Clone, Debug)]
pub enum UploadValue {
    /// A one-element Float column.
    Number(f64),
    /// A Float column.
    Numbers(Vec<f64>),
    /// A list of `{x,y[,z[,w]]}`: a Vec2/Vec3/Vec4 column (every item the same lanes).
    Vectors(Vec<Vec<f64>>),
    /// `{ type = "Int", values = {...} }`: a typed column; vector types take `lanes` numbers per
    /// element, flat.
    Typed(ColumnType, Vec<f64>),
    /// A list of text, or `{ type = "String", values = {...} }`: a String column of the values
    /// (its words index the distinct values in the order they first appear).
    Texts(Vec<String>),
    /// A table of those: a table of columns.
    Table(BTreeMap<String, UploadValue>),
    /// A column already on the device, held as the run it is.
    Column(Column),
}

/// What transfer.upload answers for one key.
#[derive(Clone, Debug)]
pub enum Uploaded {
    /// A column.
    Column(Column),
    /// A table of columns.
    Table(BTreeMap<String, Uploaded>),
}

/// The words of `values` as `ty`, refusing a number the type cannot hold by key and index.
pub fn encode(key: &str, ty: ColumnType, values: &[f64]) -> Result<Vec<u32>> {
    let lanes = ty.lanes() as usize;
    if !values.len().is_multiple_of(lanes) {
        return Err(ProcgenError::Upload {
            key: key.into(),
            problem: format!(
                "{} numbers do not fill whole {} elements of {lanes} lanes",
                values.len(),
                ty.name()
            ),
        });
    }
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            ty.word().bits_of(v).ok_or_else(|| ProcgenError::Upload {
                key: key.into(),
                problem: format!(
                    "value {i} ({v}) is not a {} ({})",
                    ty.name(),
                    ty.word().wgsl()
                ),
            })
        })
        .collect()
}

impl Cook {
    /// transfer.upload of one keyed value.
    pub fn upload(&mut self, key: &str, value: &UploadValue) -> Result<Uploaded> {
        let (ty, values) = match value {
            UploadValue::Column(c) => return Ok(Uploaded::Column(c.clone())),
            UploadValue::Table(t) => {
                let mut out = BTreeMap::new();
                for (k, v) in t {
                    out.insert(k.clone(), self.upload(&format!("{key}.{k}"), v)?);
                }
                return Ok(Uploaded::Table(out));
            }
            UploadValue::Texts(values) => {
                return Ok(Uploaded::Column(self.upload_text(key, values)))
            }
            UploadValue::Number(v) => (ColumnType::Float, vec![*v]),
            UploadValue::Numbers(v) => (ColumnType::Float, v.clone()),
            UploadValue::Vectors(items) => {
                let lanes = items.first().map_or(3, Vec::len);
                let ty = match lanes {
                    2 => ColumnType::Vec2,
                    3 => ColumnType::Vec3,
                    4 => ColumnType::Vec4,
                    _ => {
                        return Err(ProcgenError::Upload {
                            key: key.into(),
                            problem: format!("a vector of {lanes} lanes (take 2 to 4: x, y, z, w)"),
                        })
                    }
                };
                if let Some(i) = items.iter().position(|v| v.len() != lanes) {
                    return Err(ProcgenError::Upload {
                        key: key.into(),
                        problem: format!(
                            "item {i} has {} lanes, item 0 has {lanes}",
                            items[i].len()
                        ),
                    });
                }
                (ty, items.concat())
            }
            UploadValue::Typed(ty, v) => (*ty, v.clone()),
        };
        if ty == ColumnType::String {
            return Err(ProcgenError::Upload {
                key: key.into(),
                problem: "a String column takes text values, not numbers".into(),
            });
        }
        let words = encode(key, ty, &values)?;
        Ok(Uploaded::Column(self.upload_words(key, ty, &words)))
    }

    /// A String column of `values`: each word the index of its value among the distinct values,
    /// in the order they first appear.
    pub fn upload_text(&mut self, key: &str, values: &[String]) -> Column {
        let (dict, words) = text_words(values);
        Column {
            text: Some(std::sync::Arc::new(dict)),
            ..self.upload_words(key, ColumnType::String, &words)
        }
    }
}

/// The distinct values of `values` in first-seen order, and each value's index among them.
pub fn text_words(values: &[String]) -> (Vec<String>, Vec<u32>) {
    let mut dict: Vec<String> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let words = values
        .iter()
        .map(|v| {
            *index.entry(v.as_str()).or_insert_with(|| {
                dict.push(v.clone());
                dict.len() as u32 - 1
            })
        })
        .collect();
    (dict, words)
}

/// What transfer.readback reads for one key.
#[derive(Clone, Debug)]
pub enum ReadSource {
    /// A column: its live elements when it carries a live count, else every element.
    Column(Column),
    /// A live count: a number.
    Count(LiveCount),
    /// A plain number answers itself.
    Number(f64),
    /// A boolean answers itself.
    Bool(bool),
    /// Text answers itself.
    Text(String),
    /// A table of those.
    Table(BTreeMap<String, ReadSource>),
    /// A Field: evaluated over the elements of the column it reads (here: the column itself);
    /// one that reads no column has no length and is refused.
    Field(Option<Column>),
}

/// What transfer.readback answers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum ReadValue {
    /// A count or a number.
    Number(f64),
    /// A Float, Int or UInt column.
    Numbers(Vec<f64>),
    /// A vector column: `{x,y,z,w}` lanes per element.
    Vectors(Vec<Vec<f64>>),
    /// A String column: its values.
    Texts(Vec<String>),
    /// A boolean.
    Bool(bool),
    /// Text.
    Text(String),
    /// A table.
    Table(BTreeMap<String, ReadValue>),
}

impl Recording {
    /// transfer.readback of `source` under `key`, after the recording ran: waits for the device
    /// (the point the plan waited, which the caller's play report names).
    pub fn readback(&self, key: &str, source: &ReadSource) -> Result<ReadValue> {
        read(self, key, source)
    }
}

fn read(rec: &Recording, key: &str, source: &ReadSource) -> Result<ReadValue> {
    Ok(match source {
        ReadSource::Number(n) => ReadValue::Number(*n),
        ReadSource::Bool(b) => ReadValue::Bool(*b),
        ReadSource::Text(t) => ReadValue::Text(t.clone()),
        ReadSource::Count(l) => ReadValue::Number(f64::from(rec.read_words(&l.word, 1)?[0])),
        ReadSource::Table(t) => {
            let mut out = BTreeMap::new();
            for (k, v) in t {
                out.insert(k.clone(), read(rec, &format!("{key}.{k}"), v)?);
            }
            ReadValue::Table(out)
        }
        ReadSource::Field(None) => {
            return Err(ProcgenError::Readback {
                key: key.into(),
                problem: "a Field that reads no column has no length: read it over a column (field evaluated into a column by device.kernel, or readback { key = column })".into(),
            })
        }
        ReadSource::Field(Some(c)) | ReadSource::Column(c) => {
            let n = match &c.live {
                Some(l) => u64::from(rec.read_words(&l.word, 1)?[0]).min(c.capacity),
                None => c.capacity,
            };
            let words = rec.read_words(&c.buffer, n * u64::from(c.lanes))?;
            let w = c.element();
            if let Some(text) = &c.text {
                return words
                    .iter()
                    .enumerate()
                    .map(|(i, &ix)| {
                        text.get(ix as usize).cloned().ok_or_else(|| ProcgenError::Readback {
                            key: key.into(),
                            problem: format!(
                                "element {i} of a String column indexes value {ix} of {}",
                                text.len()
                            ),
                        })
                    })
                    .collect::<Result<Vec<_>>>()
                    .map(ReadValue::Texts);
            }
            if c.lanes == 1 {
                ReadValue::Numbers(words.iter().map(|&b| w.value_of(b)).collect())
            } else {
                ReadValue::Vectors(
                    words
                        .chunks(c.lanes as usize)
                        .map(|e| e.iter().map(|&b| w.value_of(b)).collect())
                        .collect(),
                )
            }
        }
    })
}

/// Writes `words` over the start of `column` (a later frame's input into a recorded column).
pub fn rewrite(queue: &gpugraph_command::wgpu::Queue, column: &Column, words: &[u32]) {
    queue.write_buffer(&column.buffer, 0, bytemuck::cast_slice(words));
}

/// Reads a one-word count now (used by guards and tests; a planning wait).
pub fn read_count(
    device: &gpugraph_command::wgpu::Device,
    queue: &gpugraph_command::wgpu::Queue,
    l: &LiveCount,
) -> Result<u32> {
    Ok(read_words(device, queue, &l.word, 1)?[0])
}
