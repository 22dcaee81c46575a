// Grouped products (GEMM_GROUP_M / _N / _K, gemm_push.h) for gemm.comp and
// gemm_coopmat.comp: where each workgroup's tile lies. Include after gemm_push.h; uses
// the kernel's push constants (pc) and tile sizes (BM, BN).
//
// With rows (GEMM_GROUP_M) or columns (GEMM_GROUP_N) grouped, the tiles along that side
// are numbered group by group, ceil(size / tile) for each, so the launch needs at most
// ceil(extent / tile) + groups of them, not groups x ceil(extent / tile): a workgroup
// finds its group by walking the offsets. Grouped depth (GEMM_GROUP_K) gives every
// group a whole output matrix: the usual batched numbering.

// This workgroup's extent of C (m, n), where it starts, and how many elements its A
// and B start past their batch's first: the whole product's, or one group's range.
uint lim_m, lim_n, off_m, off_n;
int64_t a_skip, b_skip;

// The whole product: set first, as the split-K sum pass stores with them too.
void whole_product() {
  lim_m = pc.m;
  lim_n = pc.n;
  off_m = 0u;
  off_n = 0u;
  a_skip = 0;
  b_skip = 0;
}

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

// The group g, its range and its tile `local` that tile t of the grouped side is; false
// past the last group's tiles (t is the same for the whole workgroup: a uniform answer).
bool group_tile(uint t, uint tile_size, out uint g, out uint local, out ivec2 range) {
  local = 0u;
  range = ivec2(0);
  for (g = 0u; g < pc.batch; ++g) {
    range = group_range(g);
    const uint tiles = (uint(range.y - range.x) + tile_size - 1u) / tile_size;
    if (t < tiles) {
      local = t;
      return true;
    }
    t -= tiles;
  }
  return false;
}

// Batch bi, row tile tm and column tile tn of flat tile index `tile` (within one K
// slice), and for a grouped product its group's extent (lim_*, off_*, a_skip, b_skip,
// or the K range); false for a workgroup with nothing to do (uniform). The group's
// tiles all lie within its range.
bool place_tile(uint tile, uint tiles_m, uint tiles_n, out uint bi, out uint tm, out uint tn,
                inout uint k_begin, inout uint k_end) {
  ivec2 range;
  if ((pc.flags & GEMM_GROUP_M) != 0u) {
    tn = tile % tiles_n;
    if (!group_tile(tile / tiles_n, BM, bi, tm, range)) return false;
    off_m = uint(range.x);
    lim_m = uint(range.y - range.x);
    a_skip = int64_t(range.x) * pc.a_row;
    return true;
  }
  if ((pc.flags & GEMM_GROUP_N) != 0u) {
    tm = tile % tiles_m;
    if (!group_tile(tile / tiles_m, BN, bi, tn, range)) return false;
    off_n = uint(range.x);
    lim_n = uint(range.y - range.x);
    b_skip = int64_t(range.x) * pc.b_col;
    return true;
  }
  tn = tile % tiles_n;
  const uint rest = tile / tiles_n;
  tm = rest % tiles_m;
  bi = rest / tiles_m;
  if ((pc.flags & GEMM_GROUP_K) != 0u) {
    range = group_range(bi);
    k_begin = uint(range.x);
    k_end = uint(range.y);
  }
  return true;
}
