// The one linear-workgroup index of the workspace's kernels. A grid of more workgroups than
// one dimension allows is split over x and y on the host (`gpugraph_command::grid_for`,
// `Grid::Rows`); this recovers the linear id. Launches round up, so callers bound-check rows.
fn linear_workgroup(wg: vec3<u32>, num_wg: vec3<u32>) -> u32 {
    return wg.x + wg.y * num_wg.x;
}
