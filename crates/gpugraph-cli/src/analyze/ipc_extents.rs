//! Checks an Arrow IPC file's footer against the file before arrow-ipc reads it.
//!
//! Why: arrow-ipc 60's `FileReader` allocates every length the file declares (the footer, then
//! each block's metadata + body) before reading it, so a few hundred corrupt bytes declaring a
//! 1 GB record batch made `analyze` allocate 1 GB and only then fail with "failed to fill
//! whole buffer" (found by fuzz/, kept as fuzz/seeds/table/arrow-ipc-declared-body-length-oom).
//! Its stream reader already grows bodies as data arrives, so only the file format needs this.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Bytes after the footer: its length (4) and the `ARROW1` magic (6).
const TRAILER: u64 = 10;
/// Bytes before the first message: the `ARROW1` magic and 2 bytes of padding.
const HEADER: u64 = 8;

/// Fails by name when the footer, or any dictionary or record-batch block it lists, does not
/// lie inside `path`'s bytes. Reads only the trailer and the footer. Files too short to have a
/// trailer, or with a bad magic, are left to arrow-ipc's own (named, allocation-free) errors.
pub fn check_ipc_file_extents(path: &Path) -> Result<()> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let size = file
        .metadata()
        .with_context(|| format!("reading the size of {}", path.display()))?
        .len();
    if size < HEADER + TRAILER {
        return Ok(());
    }
    let mut trailer = [0u8; TRAILER as usize];
    file.seek(SeekFrom::End(-(TRAILER as i64)))
        .and_then(|_| file.read_exact(&mut trailer))
        .with_context(|| format!("reading the Arrow IPC footer of {}", path.display()))?;
    if &trailer[4..] != b"ARROW1" {
        return Ok(());
    }
    let footer_len = i32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let room = size - HEADER - TRAILER;
    if footer_len < 0 || footer_len as u64 > room {
        bail!(
            "{}: the Arrow IPC footer declares {footer_len} bytes but the {size}-byte file has \
             room for {room} (truncated or corrupt file)",
            path.display()
        );
    }
    let footer_start = size - TRAILER - footer_len as u64;
    let mut bytes = vec![0u8; footer_len as usize];
    file.seek(SeekFrom::Start(footer_start))
        .and_then(|_| file.read_exact(&mut bytes))
        .with_context(|| format!("reading the Arrow IPC footer of {}", path.display()))?;
    // An unparsable footer is arrow-ipc's to name; it allocates nothing more for it.
    let Ok(footer) = arrow_ipc::root_as_footer(&bytes) else {
        return Ok(());
    };
    let lists = [
        ("dictionary", footer.dictionaries()),
        ("record batch", footer.recordBatches()),
    ];
    for (what, blocks) in lists {
        for (i, block) in blocks.iter().flatten().enumerate() {
            check_block(path, what, i, block, footer_start)?;
        }
    }
    Ok(())
}

/// A block is `[offset, offset + metadata + body)`; it must end at or before the footer.
fn check_block(
    path: &Path,
    what: &str,
    index: usize,
    block: &arrow_ipc::Block,
    footer_start: u64,
) -> Result<()> {
    let (offset, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
    let end = u64::try_from(offset)
        .ok()
        .zip(u64::try_from(meta).ok())
        .zip(u64::try_from(body).ok())
        .and_then(|((o, m), b)| o.checked_add(m)?.checked_add(b));
    match end {
        Some(end) if offset as u64 >= HEADER && end <= footer_start => Ok(()),
        _ => bail!(
            "{}: Arrow IPC {what} {index} declares {meta} metadata bytes and {body} body bytes \
             at offset {offset}, past the {footer_start} bytes before the footer (truncated or \
             corrupt file)",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn write_ipc(path: &Path) {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int32, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int32Array::from((0..1000).collect::<Vec<_>>()))],
        )
        .unwrap();
        let mut w =
            arrow_ipc::writer::FileWriter::try_new(File::create(path).unwrap(), &schema).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn a_valid_file_passes_and_a_truncated_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.arrow");
        write_ipc(&path);
        check_ipc_file_extents(&path).unwrap();

        // Drop 2,000 body bytes from the middle, keeping the footer: the block now runs past it.
        let bytes = std::fs::read(&path).unwrap();
        let cut = [&bytes[..1000], &bytes[3000..]].concat();
        std::fs::write(&path, cut).unwrap();
        let err = check_ipc_file_extents(&path).unwrap_err().to_string();
        assert!(err.contains("record batch 0 declares"), "{err}");
        assert!(err.contains("t.arrow"), "{err}");
    }

    #[test]
    fn a_footer_longer_than_the_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.arrow");
        write_ipc(&path);
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 10..n - 6].copy_from_slice(&i32::MAX.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        let err = check_ipc_file_extents(&path).unwrap_err().to_string();
        assert!(err.contains("footer declares 2147483647 bytes"), "{err}");
    }
}
