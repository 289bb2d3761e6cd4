// Thread indexing shared by the MSM pipeline stages (their parameter block, Params, is
// generated from src/gpu/shader/contract.rs).
//
// Dispatches are two-dimensional when one dimension would exceed 65535 workgroups; a thread's
// linear index is x + y * (workgroups in x) * WORKGROUP_SIZE.

fn thread_index(gid: vec3<u32>, num_workgroups: vec3<u32>) -> u32 {
    return gid.x + gid.y * num_workgroups.x * WORKGROUP_SIZE;
}

// The linear index of workgroup `wid`, for stages that give each workgroup one block.
fn workgroup_index(wid: vec3<u32>, num_workgroups: vec3<u32>) -> u32 {
    return wid.x + wid.y * num_workgroups.x;
}
