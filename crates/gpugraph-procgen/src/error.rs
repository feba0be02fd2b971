//! Every refusal of the procgen ops, each naming what it refused (kernel, binding, param,
//! column, count) and the numbers involved.

use gpugraph_command::GraphError;

/// A refused procgen op. Nothing is dispatched for a call that returns one.
#[derive(Debug, thiserror::Error)]
pub enum ProcgenError {
    /// `kernel` was given as a name instead of a reference resolved from a literal identity.
    #[error("kernel `{name}` is a bare name: resolve it with asset.resolve(\"<namespace>/<kernel>\", \"computeShader\")")]
    BareKernelName {
        /// The name given.
        name: String,
    },
    /// `asset.resolve` was given something that is not a literal `<namespace>/<name>` identity.
    #[error("`{identity}` is not a literal asset identity of the form `<namespace>/<name>`")]
    NotAnIdentity {
        /// What was given.
        identity: String,
    },
    /// No asset of that identity and kind exists.
    #[error("no {kind} asset `{identity}` in the asset library")]
    UnknownAsset {
        /// The identity asked for.
        identity: String,
        /// The kind asked for.
        kind: String,
    },
    /// An asset kind this host does not resolve.
    #[error("asset `{identity}`: kind `{kind}` is not resolved here (only computeShader)")]
    UnsupportedAssetKind {
        /// The identity asked for.
        identity: String,
        /// The kind asked for.
        kind: String,
    },
    /// `bindings.yaml` does not parse into the schema.
    #[error("kernel `{kernel}`: bindings.yaml: {source}")]
    Schema {
        /// The kernel identity.
        kernel: String,
        /// The YAML error (with its line and column).
        source: serde_norway::Error,
    },
    /// The schema contradicts itself (a duplicate name, a `when` over an unknown key, ...).
    #[error("kernel `{kernel}`: bindings.yaml: {field} `{name}` {problem}")]
    SchemaField {
        /// The kernel identity.
        kernel: String,
        /// Which kind of entry (binding, param, specialize, output).
        field: &'static str,
        /// Its name.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A `// @when` block without its `// @end` (or the reverse).
    #[error("kernel `{kernel}`: kernel.wgsl line {line}: {problem}")]
    WhenBlock {
        /// The kernel identity.
        kernel: String,
        /// 1-based line.
        line: usize,
        /// What is unbalanced.
        problem: &'static str,
    },
    /// A specialize value the kernel does not offer.
    #[error("kernel `{kernel}`: specialize `{name}` has no option `{value}` (options: {options})")]
    SpecializeOption {
        /// The kernel identity.
        kernel: String,
        /// The specialize parameter.
        name: String,
        /// The value given.
        value: String,
        /// The options, space separated.
        options: String,
    },
    /// A specialize name the kernel does not declare.
    #[error("kernel `{kernel}`: `{name}` is not one of its specialize parameters")]
    UnknownSpecialize {
        /// The kernel identity.
        kernel: String,
        /// The name given.
        name: String,
    },
    /// The WGSL of a variant does not parse or validate, or lacks the declared entry point.
    #[error("kernel `{kernel}` variant [{variant}]: WGSL: {message}")]
    Wgsl {
        /// The kernel identity.
        kernel: String,
        /// The variant, `KEY=value` pairs.
        variant: String,
        /// naga's message.
        message: String,
    },
    /// The WGSL and bindings.yaml disagree about a binding or a param.
    #[error("kernel `{kernel}` variant [{variant}]: `{name}` is {wgsl} in kernel.wgsl but {yaml} in bindings.yaml")]
    SchemaMismatch {
        /// The kernel identity.
        kernel: String,
        /// The variant.
        variant: String,
        /// The binding or param.
        name: String,
        /// What the WGSL says.
        wgsl: String,
        /// What the schema says.
        yaml: String,
    },
    /// A variant binds more storage buffers than a stage may.
    #[error("kernel `{kernel}` variant [{variant}] binds {count} storage buffers, more than the {limit} a stage binds")]
    StorageLimit {
        /// The kernel identity.
        kernel: String,
        /// The variant.
        variant: String,
        /// Storage buffers the variant declares.
        count: usize,
        /// The limit (8, the web's).
        limit: usize,
    },
    /// A uniform the shader does not declare.
    #[error("kernel `{kernel}`: uniform `{name}` is not a param the shader declares")]
    UnknownUniform {
        /// The kernel identity.
        kernel: String,
        /// The uniform's name.
        name: String,
    },
    /// A declared param that nothing gives.
    #[error(
        "kernel `{kernel}`: param `{name}` is declared but no uniform, step value or bind gives it"
    )]
    MissingParam {
        /// The kernel identity.
        kernel: String,
        /// The param.
        name: String,
    },
    /// A number a param of that type cannot hold exactly.
    #[error("kernel `{kernel}`: param `{name}` ({ty}) cannot hold {value}")]
    ParamValue {
        /// The kernel identity.
        kernel: String,
        /// The param.
        name: String,
        /// Its WGSL type.
        ty: &'static str,
        /// The value given.
        value: f64,
    },
    /// A read binding left unbound with no column of its name in `columns`.
    #[error("kernel `{kernel}`: binding `{binding}` is not bound and `columns` has no column `{binding}`")]
    Unbound {
        /// The kernel identity.
        kernel: String,
        /// The binding.
        binding: String,
    },
    /// A bind name the kernel has no binding (nor output size) of.
    #[error("kernel `{kernel}`: `{name}` is bound but the kernel has no binding or output size of that name")]
    UnknownBinding {
        /// The kernel identity.
        kernel: String,
        /// The name bound.
        name: String,
    },
    /// A value of the wrong form for its binding.
    #[error("kernel `{kernel}`: binding `{binding}` takes {expected}, got {got}")]
    BindKind {
        /// The kernel identity.
        kernel: String,
        /// The binding.
        binding: String,
        /// The form it takes.
        expected: &'static str,
        /// The form given.
        got: &'static str,
    },
    /// A columns binding's table does not hold exactly the ordered columns.
    #[error("kernel `{kernel}`: columns binding `{binding}` states order `{order}` but the table holds `{got}`")]
    ColumnsOrder {
        /// The kernel identity.
        kernel: String,
        /// The binding.
        binding: String,
        /// The stated order.
        order: String,
        /// The names the table holds, sorted.
        got: String,
    },
    /// Columns of one packed table (or lanes of one binding) disagree in length.
    #[error("kernel `{kernel}`: column `{column}` of binding `{binding}` has {got} words, expected {expected}")]
    ColumnLength {
        /// The kernel identity.
        kernel: String,
        /// The binding.
        binding: String,
        /// The column.
        column: String,
        /// Its words.
        got: u64,
        /// The words expected.
        expected: u64,
    },
    /// An output the schema gives no size.
    #[error("kernel `{kernel}`: output `{binding}` states no count or capacity and is not bound")]
    OutputUnsized {
        /// The kernel identity.
        kernel: String,
        /// The output binding.
        binding: String,
    },
    /// A live count reached a kernel that has no variant reading one.
    #[error("kernel `{kernel}` has no COUNT=device variant nor a domain_count binding: it cannot run over a live count")]
    LiveDomainUnsupported {
        /// The kernel identity.
        kernel: String,
    },
    /// A size past what one dispatch or a u32 index addresses.
    #[error("{what} is {value}, past the limit {limit}")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its value.
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// A count above the capacity a node stated (overflow = count − capacity).
    #[error("{what}: count {count} exceeds its capacity {capacity}; {overflow} did not fit")]
    Overflow {
        /// The counted output.
        what: String,
        /// The true count.
        count: u64,
        /// The capacity.
        capacity: u64,
        /// count − capacity.
        overflow: u64,
    },
    /// A transfer.upload value of a form it does not take.
    #[error("upload `{key}`: {problem}")]
    Upload {
        /// The record key.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// A transfer.readback of something with no length.
    #[error("readback `{key}`: {problem}")]
    Readback {
        /// The record key.
        key: String,
        /// What is wrong, and the form to use.
        problem: String,
    },
    /// device.guard found its flag set.
    #[error("guard `{why}` refused the cook (flag {flag})")]
    Guard {
        /// The guard's reason.
        why: String,
        /// The flag's value.
        flag: u32,
    },
    /// The command graph refused a node or failed to compile or encode.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// Mapping a readback buffer failed.
    #[error("reading `{what}` back from the device failed: {message}")]
    Map {
        /// What was read.
        what: String,
        /// wgpu's message.
        message: String,
    },
    /// A Luau script or function failed.
    #[error("luau: {message}")]
    Luau {
        /// Luau's message, with its traceback.
        message: String,
    },
    /// An op was called while another op ran a function of the script (cpu.call's `fn`, a
    /// cpu.read digest, a guard's `detail`): no op calls another op.
    #[error("{op} was called inside {inside}: no op calls another op (call it from cook)")]
    OpInOp {
        /// The op called.
        op: &'static str,
        /// The op whose function called it.
        inside: &'static str,
    },
    /// A Handle's release function failed when the result holding it was released.
    #[error("releasing a Handle returned by cpu.call failed: {message}")]
    Release {
        /// Luau's message.
        message: String,
    },
    /// cpu.call returned something other than its declared types.
    #[error("cpu.call `{call}`: result {index} is {got}, declared {expected}")]
    ReturnType {
        /// The function's name (or `?`).
        call: String,
        /// 1-based result index.
        index: usize,
        /// The declared type name.
        expected: String,
        /// What it returned.
        got: String,
    },
    /// cpu.call ran past its CPU-time ceiling.
    #[error(
        "cpu.call `{call}` ran past its ceiling of {ceiling_ms} ms of CPU time ({used_ms} ms)"
    )]
    Ceiling {
        /// The function's name (or `?`).
        call: String,
        /// The ceiling.
        ceiling_ms: u64,
        /// CPU time used when it was stopped.
        used_ms: u64,
    },
    /// Script text that is not Luau source: Luau bytecode (first byte below 0x09), which
    /// the VM trusts and so is never loaded from a script.
    #[error("script `{script}` is not Luau source text: it starts with byte {first_byte:#04x}, as Luau bytecode does, and only source text is loaded")]
    Bytecode {
        /// The script's name.
        script: String,
        /// Its first byte.
        first_byte: u8,
    },
    /// A script ran past its CPU-time ceiling (CPU time of the host thread, ops included,
    /// plus the time it slept in task.wait/task.delay), or asked to sleep past it.
    #[error("script exceeded its {} s CPU-time ceiling (--script-timeout) in {during}: {used_ms} ms used", seconds(*limit_ms))]
    ScriptTimeout {
        /// What was running: `load`, `inputs(frame 3)`, `cook(frame 3)`, ...
        during: String,
        /// The ceiling.
        limit_ms: u64,
        /// CPU time plus sleep when it was stopped (with a sleep it refused, what it asked).
        used_ms: u64,
    },
    /// A script's allocations reached its memory limit.
    #[error("script exceeded its {} memory limit (--script-memory) in {during}", size(*limit_bytes))]
    ScriptMemory {
        /// What was running.
        during: String,
        /// The limit.
        limit_bytes: usize,
    },
    /// A Luau value the host could not convert (a cycle, or nesting too deep).
    #[error(transparent)]
    Value(#[from] ValueError),
    /// An asset root that is no directory.
    #[error("asset root `{}` {problem}", path.display())]
    AssetRoot {
        /// The path given.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// device.bound given a value or capacity that is not a whole number of elements.
    #[error(
        "device.bound `{bound}`: `{field}` = {value} is not a whole number of elements (0 to 2^53)"
    )]
    BoundValue {
        /// The bound's name.
        bound: String,
        /// `value` or `capacity`.
        field: &'static str,
        /// The number given.
        value: f64,
    },
}

/// A Luau value the host cannot convert: a table that holds itself, or tables nested past the
/// depth the conversion walks (each would otherwise recurse until the stack overflows).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A table reached again while converting it (`t.self = t`).
    #[error("{what} `{path}`: the table contains itself (it is `{back}` again)")]
    Cycle {
        /// What was converted (`upload`, `readback`, `digest`, ...).
        what: &'static str,
        /// The key path where the table came back.
        path: String,
        /// The key path of that table's first appearance.
        back: String,
    },
    /// Tables nested deeper than the conversion walks.
    #[error("{what} `{path}`: tables nest deeper than {limit} levels")]
    TooDeep {
        /// What was converted.
        what: &'static str,
        /// The key path at the limit.
        path: String,
        /// The most levels converted.
        limit: usize,
    },
}

/// Seconds as a short text (`10`, `0.25`).
fn seconds(ms: u64) -> String {
    format!("{}", ms as f64 / 1000.0)
}

/// Bytes as a short text (`1024 MiB`, or bytes when not whole MiB).
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Result of a procgen op.
pub type Result<T> = std::result::Result<T, ProcgenError>;
