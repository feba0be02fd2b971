//! Groups the filter empties (issue 13 §7): like pandas' groupby after filtering, `analyze`
//! leaves a group with no row passing the filters out of report.json's `groups` and the text
//! table, names it in `groups_without_selected_rows` and a note; a group whose selected rows
//! have no finite value stays with count 0 and a null mean (pandas: NaN). Without filters
//! every group is reported. Runs on the real GPU path (lavapipe on CI).

mod common;

use common::*;
use serde_json::{json, Value};

/// Group `keep` passes `d >= 10` with values; `gone` never passes; `blank` passes with only
/// null and NaN values; `half` has one passing and one failing row.
const CSV: &str = "\
g,v,d
keep,1.5,10
keep,2.5,20
gone,100,1
gone,200,2
blank,NA,30
blank,NaN,40
half,7,50
half,1000,5
,3,60
";

fn run(dir: &TempDir, name: &str, args: &[&str]) -> (Value, String) {
    let csv = dir.path("groups.csv");
    std::fs::write(&csv, CSV).unwrap();
    let out_dir = dir.path(name);
    let mut all = vec!["analyze", csv.as_str(), "--group", "g", "--out", &out_dir];
    all.extend_from_slice(args);
    let out = gpugraph(&all);
    assert_success(&all, &out);
    let json = std::fs::read_to_string(dir.0.join(name).join("report.json")).unwrap();
    (serde_json::from_str(&json).unwrap(), text(&out.stdout))
}

fn keys(r: &Value) -> Vec<String> {
    r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn groups_emptied_by_the_filter_are_left_out_and_named() {
    let dir = TempDir::new("filtered-groups");
    for value in [true, false] {
        let mut args = vec!["--filter", "d >= 10"];
        if value {
            args.extend(["--value", "v"]);
        }
        let name = if value { "with-value" } else { "groups-only" };
        let (r, stdout) = run(&dir, name, &args);
        assert_eq!(r["schema_version"], 3);
        assert_eq!(r["selected"], 6);
        assert_eq!(keys(&r), ["blank", "half", "keep"], "{name}");
        assert_eq!(r["groups_without_selected_rows"], json!(["gone"]), "{name}");
        let by_key = |k: &str| {
            r["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["key"] == k)
                .cloned()
                .unwrap()
        };
        if value {
            assert_eq!(by_key("keep")["count"], 2);
            assert_eq!(by_key("keep")["mean"], 2.0);
            assert_eq!(by_key("half")["count"], 1);
            assert_eq!(by_key("half")["mean"], 7.0);
            // Selected rows without a finite value: kept, count 0, mean null.
            assert_eq!(by_key("blank")["count"], 0);
            assert!(by_key("blank")["mean"].is_null());
        } else {
            assert_eq!(by_key("blank")["count"], 2);
            assert_eq!(by_key("keep")["count"], 2);
        }
        let notes = r["notes"].as_array().unwrap();
        assert!(
            notes.iter().any(|n| {
                let n = n.as_str().unwrap();
                n.starts_with("1 group of 'g' with no row passing the filters")
                    && n.ends_with("'gone'")
            }),
            "{name}: {notes:?}"
        );
        // The text table agrees with report.json.
        assert!(
            stdout.contains("groups by 'g' (3; 1 without rows passing the filters not shown;"),
            "{name}:\n{stdout}"
        );
        let table: Vec<&str> = stdout
            .lines()
            .skip_while(|l| !l.starts_with("groups by"))
            .take_while(|l| !l.trim().is_empty())
            .collect();
        assert!(table.iter().any(|l| l.trim_start().starts_with("keep ")));
        assert!(
            !table.iter().any(|l| l.trim_start().starts_with("gone")),
            "{name}: {table:?}"
        );
    }
}

#[test]
fn without_filters_every_group_is_reported() {
    let dir = TempDir::new("unfiltered-groups");
    let (r, stdout) = run(&dir, "all", &["--value", "v"]);
    assert_eq!(keys(&r), ["blank", "gone", "half", "keep"]);
    assert_eq!(r["groups_without_selected_rows"], json!([]));
    let blank = &r["groups"][0];
    assert_eq!(blank["count"], 0);
    assert!(blank["mean"].is_null());
    assert!(stdout.contains("groups by 'g' (4; count"), "{stdout}");
}

#[test]
fn a_filter_that_empties_every_group_reports_none() {
    let dir = TempDir::new("all-groups-filtered");
    let (r, stdout) = run(&dir, "none", &["--value", "v", "--filter", "d > 1000"]);
    assert_eq!(r["selected"], 0);
    assert_eq!(keys(&r), Vec::<String>::new());
    assert_eq!(
        r["groups_without_selected_rows"],
        json!(["blank", "gone", "half", "keep"])
    );
    assert!(
        stdout.contains("groups by 'g' (0; 4 without rows passing the filters not shown;"),
        "{stdout}"
    );
}
