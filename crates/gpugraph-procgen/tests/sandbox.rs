//! What a hostile script cannot do: load bytecode, reach a loader, the environment
//! functions or a writable library or string metatable, overflow the host's stack with a
//! table that holds itself (or nests deeply), make device.bound's number out of a negative or
//! fractional one, or name an asset root that is not there without a word.

mod common;

use common::*;
use gpugraph_procgen::luau::{Host, PlayReport, CLOSED_GLOBALS};
use gpugraph_procgen::transfer::ReadValue;
use gpugraph_procgen::{AssetLibrary, ProcgenError, ValueError};

fn host() -> (gpugraph_command::GpuContext, Host) {
    let ctx = ctx();
    let h = Host::new(&ctx.device, &ctx.queue, AssetLibrary::new()).unwrap();
    (ctx, h)
}

fn play(source: &str, frames: u64) -> Result<PlayReport, ProcgenError> {
    let (_ctx, h) = host();
    h.load("test.luau", source)?;
    h.play(frames)
}

#[test]
fn bytecode_is_refused_by_name_and_only_source_text_loads() {
    let (_ctx, h) = host();
    // Real Luau bytecode of a harmless script: the VM would run it, so only its origin
    // (untrusted bytes) refuses it.
    let bytecode = mlua::Compiler::new()
        .compile("function cook(frame) return 1 end")
        .unwrap();
    assert!(bytecode[0] < b'\t', "Luau bytecode starts with its version");
    let e = h.load("compiled.luau", &bytecode).unwrap_err();
    assert!(
        matches!(e, ProcgenError::Bytecode { ref script, first_byte } if script == "compiled.luau" && first_byte == bytecode[0]),
        "{e}"
    );
    assert!(e.to_string().contains("compiled.luau"), "{e}");
    assert!(
        h.lua()
            .globals()
            .get::<mlua::Value>("cook")
            .unwrap()
            .is_nil(),
        "nothing of it ran"
    );
    // Bytes below 0x09 that are no valid bytecode (what crashed the VM): the same refusal.
    for bytes in [
        &b"\x00"[..],
        b"\x01\x02\x03garbage",
        b"\x05\xff\xff\xff\xff\x7f",
        b"\x08",
    ] {
        let e = h.load("garbage.luau", bytes).unwrap_err();
        assert!(
            matches!(e, ProcgenError::Bytecode { first_byte, .. } if first_byte == bytes[0]),
            "{e}"
        );
    }
    // Source text loads, a tab first included; the empty script too.
    h.load("tab.luau", "\tx = 1").unwrap();
    h.load("empty.luau", "").unwrap();
    assert_eq!(h.lua().globals().get::<i64>("x").unwrap(), 1);
}

#[test]
fn loaders_and_environment_functions_are_closed() {
    let (_ctx, h) = host();
    assert!(CLOSED_GLOBALS.contains(&"loadstring"));
    for name in CLOSED_GLOBALS {
        h.load(
            "probe.luau",
            format!("assert({name} == nil, '{name} is open')"),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Calling one is an error, not code run.
    let e = h.load("call.luau", "loadstring('y = 1')()").unwrap_err();
    assert!(e.to_string().contains("attempt to call a nil value"), "{e}");
    assert!(h.lua().globals().get::<mlua::Value>("y").unwrap().is_nil());
    // collectgarbage answers its count and nothing else (no stop, step or full collection).
    h.load(
        "gc.luau",
        "assert(type(collectgarbage('count')) == 'number')",
    )
    .unwrap();
    for option in ["collect", "stop", "restart", "step", "isrunning"] {
        let e = h
            .load("gc.luau", format!("collectgarbage('{option}')"))
            .unwrap_err();
        assert!(e.to_string().contains("invalid option"), "{option}: {e}");
    }
}

#[test]
fn libraries_the_string_metatable_and_the_host_globals_are_read_only() {
    let (_ctx, h) = host();
    let writes = [
        "getmetatable('').__index = { upper = function() return 'pwned' end }",
        "getmetatable('').__index.upper = function() return 'pwned' end",
        "string.upper = function() return 'pwned' end",
        "setmetatable(getmetatable(''), {})",
        "task.wait = function() end",
        "cpu.call = function() end",
        "device.bound = nil",
        "_G.cook = function() end",
        "rawset(_G, 'x', 1)",
        "table.insert = nil",
    ];
    for w in writes {
        let e = h.load("write.luau", w).unwrap_err();
        assert!(
            e.to_string().contains("readonly") || e.to_string().contains("protected"),
            "`{w}`: {e}"
        );
    }
    h.load("still.luau", "assert(('a'):upper() == 'A')")
        .unwrap();
    // A script's own globals are its own: they are written and the host reads them.
    h.load("own.luau", "counter = 1; counter += 1; function cook() end")
        .unwrap();
    assert_eq!(h.lua().globals().get::<i64>("counter").unwrap(), 2);
    assert!(h.lua().globals().get::<mlua::Function>("cook").is_ok());
}

#[test]
fn a_table_that_holds_itself_is_refused_with_its_key_path() {
    let readback = r#"
function cook(frame)
    local t = { a = 1, inner = {} }
    t.inner.back = t
    return transfer.readback({ columns = { t = t } })
end
"#;
    let e = play(readback, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "readback `t.inner.back`: the table contains itself (it is `t` again)"
    );
    assert!(
        matches!(
            e,
            ProcgenError::Value(ValueError::Cycle {
                what: "readback",
                ..
            })
        ),
        "{e:?}"
    );
    let upload = r#"
function cook(frame)
    local t = { a = 1 }
    t.self = t
    transfer.upload({ values = { t = t } })
    return transfer.readback({ columns = {} })
end
"#;
    let e = play(upload, 1).unwrap_err();
    let ProcgenError::Value(v) = &e else {
        panic!("{e}")
    };
    assert_eq!(
        v,
        &ValueError::Cycle {
            what: "upload",
            path: "t.self".into(),
            back: "t".into()
        }
    );
    let inputs = r#"
function inputs(frame)
    local t = { n = 1 }
    t.again = t
    return { t = t }
end
function cook(frame) return transfer.readback({ columns = {} }) end
"#;
    let e = play(inputs, 1).unwrap_err();
    assert!(e.to_string().contains("upload `t.again`"), "{e}");
    let digest = r#"
function d() local t = {} t.t = t return t end
function cook(frame)
    cpu.read({ fn = function() return 1 end, returns = { "Number" }, digest = d })
    return transfer.readback({ columns = {} })
end
"#;
    let e = play(digest, 1).unwrap_err();
    assert!(
        matches!(e, ProcgenError::Value(ValueError::Cycle { what: "cpu.read digest", ref path, .. }) if path == "t"),
        "{e}"
    );
    // A pure call over a table that holds itself is called (not folded), not a hang.
    let pure = r#"
function cook(frame)
    local t = {} t.t = t
    local n = cpu.call({ fn = function(x) return 7 end, args = { t }, returns = { "Number" }, pure = true })[1]
    return transfer.readback({ columns = { n = n } })
end
"#;
    let report = play(pure, 2).unwrap();
    assert_eq!(report.frames[1].values["n"], ReadValue::Number(7.0));
    assert_eq!(report.folded_calls, 0);
}

#[test]
fn tables_nested_past_the_depth_limit_are_refused_by_name() {
    let deep = r#"
function cook(frame)
    local t = { leaf = 1 }
    for i = 1, 100000 do t = { d = t } end
    return transfer.readback({ columns = { t = t } })
end
"#;
    let e = play(deep, 1).unwrap_err();
    let ProcgenError::Value(ValueError::TooDeep { what, path, limit }) = &e else {
        panic!("{e}");
    };
    assert_eq!((*what, *limit), ("readback", 64));
    assert_eq!(path, &format!("t{}", ".d".repeat(64)));
    // 64 levels convert.
    let ok = deep.replace("100000", "62");
    play(&ok, 1).unwrap();
}

#[test]
fn a_bound_that_is_no_whole_number_of_elements_is_refused_by_name() {
    let bound = |value: &str, capacity: &str| {
        format!(
            r#"
function cook(frame)
    local n = device.bound({{ name = "points", value = {value}{capacity} }})
    return transfer.readback({{ columns = {{ n = n }} }})
end
"#
        )
    };
    for (value, shown) in [("-5", "-5"), ("2.5", "2.5"), ("0/0", "NaN"), ("1/0", "inf")] {
        let e = play(&bound(value, ""), 1).unwrap_err();
        assert!(
            matches!(e, ProcgenError::BoundValue { ref bound, field: "value", .. } if bound == "points"),
            "{value}: {e}"
        );
        assert_eq!(
            e.to_string(),
            format!("device.bound `points`: `value` = {shown} is not a whole number of elements (0 to 2^53)")
        );
    }
    let e = play(&bound("3", ", capacity = -1"), 1).unwrap_err();
    assert!(
        matches!(e, ProcgenError::BoundValue { field: "capacity", value, .. } if value == -1.0),
        "{e}"
    );
    let report = play(&bound("5", ""), 1).unwrap();
    assert_eq!(report.frames[0].values["n"], ReadValue::Number(5.0));
}

#[test]
fn an_asset_root_that_is_not_there_is_named() {
    let missing = std::env::temp_dir().join("gpugraph-procgen-no-such-root");
    let e = AssetLibrary::new()
        .with_existing_root(&missing)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("asset root `{}` does not exist", missing.display())
    );
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let e = AssetLibrary::new().with_existing_root(file).unwrap_err();
    assert!(
        matches!(e, ProcgenError::AssetRoot { ref problem, .. } if problem == "is not a directory"),
        "{e}"
    );
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graph/assets");
    let lib = AssetLibrary::new().with_existing_root(dir).unwrap();
    lib.resolve("example/children", "computeShader").unwrap();
}
