// Grouped products (GEMM_GROUP_M / _N / _K, gemm_push.h) for gemm.comp and
// gemm_coopmat.comp: where each workgroup's tile lies. Include after gemm_push.h; uses
// the kernel's push constants (pc) and tile sizes (BM, BN).
//
// With rows (GEMM_GROUP_M) or columns (GEMM_GROUP_N) grouped, the tiles along that side
// are numbered group by group, ceil(size / tile) for each, so the launch needs at most
// ceil(extent / tile) + groups of them, not groups x ceil(extent / tile): a workgroup
// finds its group by walking the offsets. Grouped depth (GEMM_GROUP_K) gives every
// group a whole output matrix: the usual batched numbering.

// [lo, hi) of group g: the offsets on the device, clamped to the grouped extent and
// ordered, so that no offsets can make a workgroup read or write out of bounds.
ivec2 group_range(uint g) {
  const bool gm = (pc.flags & GEMM_GROUP_M) != 0u, gn = (pc.flags & GEMM_GROUP_N) != 0u;
  const int extent = int(gm ? pc.m : (gn ? pc.n : pc.k));
  BufI32 offs = BufI32(pc.bias);
  const int lo = g == 0u ? 0 : clamp(offs.v[g - 1u], 0, extent);
  return ivec2(lo, clamp(offs.v[g], lo, extent));
}

// The workgroups (tiles) a product launches, of tiles_m x tiles_n per batch unsplit.
uint launched_tiles(uint tiles_m, uint tiles_n) {
  if ((pc.flags & GEMM_GROUP_M) != 0u) return (tiles_m + pc.batch) * tiles_n;
  if ((pc.flags & GEMM_GROUP_N) != 0u) return tiles_m * (tiles_n + pc.batch);
  return tiles_m * tiles_n * pc.batch;
}

// The group g and its tile `local` that tile t of the grouped side is; false past the
// last group's tiles (t is the same for the whole workgroup: a uniform answer).
bool group_tile(uint t, uint tile_size, out uint g, out uint local) {
  local = 0u;
  for (g = 0u; g < pc.batch; ++g) {
    const ivec2 r = group_range(g);
    const uint tiles = (uint(r.y - r.x) + tile_size - 1u) / tile_size;
    if (t < tiles) {
      local = t;
      return true;
    }
    t -= tiles;
  }
  return false;
}

// Batch bi, row tile tm and column tile tn of flat tile index `tile` (within one K
// slice); false for a workgroup with nothing to do.
bool place_tile(uint tile, uint tiles_m, uint tiles_n, out uint bi, out uint tm, out uint tn) {
  if ((pc.flags & GEMM_GROUP_M) != 0u) {
    tn = tile % tiles_n;
    return group_tile(tile / tiles_n, BM, bi, tm);
  }
  if ((pc.flags & GEMM_GROUP_N) != 0u) {
    tm = tile % tiles_m;
    return group_tile(tile / tiles_m, BN, bi, tn);
  }
  tn = tile % tiles_n;
  const uint rest = tile / tiles_n;
  tm = rest % tiles_m;
  bi = rest / tiles_m;
  return true;
}
