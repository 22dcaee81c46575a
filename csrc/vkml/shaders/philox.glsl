// Philox4x32 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): a counter-based generator, `rounds` rounds of a bijection of the 128-bit
// counter under a 64-bit key, so any thread draws any element's numbers directly, on
// any GPU and launch shape. Ten rounds is the authors' default; seven already passes
// TestU01's BigCrush.
uvec4 philox4x32(uvec4 ctr, uvec2 key, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, ctr.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, ctr.z, hi1, lo1);
    ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return ctr;
}
