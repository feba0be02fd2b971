// Shared by kernels dispatched over more workgroups than one dimension allows: the host
// splits the count over x and y (see kernel::dispatch::grid_for); this recovers the linear id.
fn linear_workgroup(wg: vec3<u32>, num_wg: vec3<u32>) -> u32 {
    return wg.x + wg.y * num_wg.x;
}
