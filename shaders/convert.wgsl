// convert, short Weierstrass profiles (Limbs13, Limbs29): check uploaded bases first_point ..
// num_points (check_upload: a base that fails sets the call's status word) and convert them,
// in place, from arkworks' Montgomery form (x * 2^(64 N)) to ours (x * R; for BLS12-377,
// 2^384 to 2^390 on 13-bit limbs and 2^377 on 29-bit limbs). Each base is BASE_WORDS u32
// words: x then y, ELEMENT_WORDS packed words each. Resident bases
// are converted once, when they are loaded; a call on them converts only the points SRE
// merged on the host.


@compute @workgroup_size(WORKGROUP_SIZE)
fn convert(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = params.first_point + thread_index(gid, nwg);
    if (i >= params.num_points) {
        return;
    }
    let x = upload_coord(i, 0u);
    let y = upload_coord(i, 1u);
    check_upload(i, x, y);
    let base = i * BASE_WORDS;
    let cx = fe_pack(fe_from_arkworks(fe_unpack(x)));
    let cy = fe_pack(fe_from_arkworks(fe_unpack(y)));
    // unroll
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        bases[base + k] = cx[k];
        bases[base + ELEMENT_WORDS + k] = cy[k];
    }
}
