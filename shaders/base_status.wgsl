// The one line each convert stage runs on every uploaded base before anything else reads it,
// writing the call's status words (`status`, src/gpu/shader/contract.rs). Bindings are
// declared by src/gpu/stages.rs.


// Checks uploaded base i (arkworks' words of x and y, base_check.wgsl); a base that fails
// sets the status word, the first such index winning (atomicMax of bad_base_marker).
fn check_upload(i: u32, x: PackedFe, y: PackedFe) {
    if (!upload_is_valid(x, y)) {
        atomicMax(&status[STATUS_BAD_BASE], bad_base_marker(i));
    }
}

// Coordinate c (0: x, 1: y) of uploaded base i as the upload holds it, from the stage's own
// `bases` binding (BASE_WORDS words a base).
fn upload_coord(i: u32, c: u32) -> PackedFe {
    var w: PackedFe;
    // unroll
    for (var k = 0u; k < ELEMENT_WORDS; k++) {
        w[k] = bases[i * BASE_WORDS + c * ELEMENT_WORDS + k];
    }
    return w;
}
