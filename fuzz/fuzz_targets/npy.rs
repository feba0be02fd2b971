//! The `.npy` reader on arbitrary bytes: never a panic; an accepted array is self-consistent
//! (bytes = rows × columns × element size), survives a write/read round trip, and reading the
//! same bytes from a file (the streaming path, with the file's length known) gives the same
//! answer as parsing them in memory.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/gpugraph-cli/src"]
mod cli {
    pub mod npy;
}

use cli::npy;

fuzz_target!(|data: &[u8]| {
    let parsed = npy::parse(Path::new("fuzz.npy"), data);
    if let Ok(a) = &parsed {
        let elements: usize = a.shape.iter().product();
        assert_eq!(a.data.len(), elements * a.dtype.size(), "{:?}", a.shape);
        assert!((1..=2).contains(&a.shape.len()));
        let again = npy::parse(Path::new("again.npy"), &npy::encode(a)).expect("round trip");
        assert_eq!(&again, a);
    }
    let file = std::env::temp_dir().join(format!("gpugraph-fuzz-npy-{}.npy", std::process::id()));
    std::fs::write(&file, data).expect("scratch file");
    let read = npy::read(&file);
    match (&parsed, &read) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        _ => panic!("parse and read disagree: {parsed:?} vs {read:?}"),
    }
    // The uint32 reader: 1-D integer arrays whose values are all uint32. Where both readers
    // accept a uint32 file they agree word for word.
    let words = npy::read_u32_vector(&file, "fuzz input");
    if let (Ok(words), Ok(a)) = (&words, &read) {
        assert_eq!(a.shape, vec![words.len()]);
        if a.dtype == npy::Dtype::U32 {
            assert_eq!(&a.words(), words);
        }
    }
});
