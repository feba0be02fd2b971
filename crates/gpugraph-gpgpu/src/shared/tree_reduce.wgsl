// Fixed-order workgroup tree reduction, shared by the reduction (reduce/reduce.wgsl), the
// sparse kernels' sums (sparse/common.wgsl), the partition totals
// (compact/partition_totals.wgsl), the hash statistics (hash/stats.wgsl) and the program
// crate's dot product. Slot i folds in slot i + s for s = width / 2, width / 4, ..., 1, so
// the result is combined in the same order on every run (the same bits for float sums, for a
// given workgroup size) whatever the schedule.
//
// The includer keeps one value per invocation in workgroup memory (its own arrays, of its own
// types) and supplies `fn tree_combine(slot: u32, other: u32)`, which folds slot `other` into
// `slot`. Call `tree_reduce` from uniform control flow after every invocation stored its
// slot; `width` is the number of slots, a power of two (the workgroup size). On return slot 0
// holds the result and every invocation may read it (reuse of the slots needs a barrier).
fn tree_reduce(lid: u32, width: u32) {
    workgroupBarrier();
    for (var s = width / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            tree_combine(lid, lid + s);
        }
        workgroupBarrier();
    }
}
