// convert, Limbs32 profile, whose stored bases are the upload itself: no conversion,
// only the check of base_check.wgsl over the uploaded bases first_point .. num_points. A
// base that fails it sets the call's status word (base_status.wgsl), which the host reads
// back with the window sums and answers with InvalidBase instead of a sum.


@compute @workgroup_size(WORKGROUP_SIZE)
fn convert(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = params.first_point + thread_index(gid, nwg);
    if (i >= params.num_points) {
        return;
    }
    check_upload(i, upload_coord(i, 0u), upload_coord(i, 1u));
}
