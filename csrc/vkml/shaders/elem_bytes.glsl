// Pure data movement moves elements by size, so one variant per element size
// serves every dtype: define EL (1, 2, 4 or 8) before including.
#if EL == 1
#define EBUF BufU8
#define ETYPE uint8_t
#elif EL == 2
#define EBUF BufU16
#define ETYPE uint16_t
#elif EL == 4
#define EBUF BufU32
#define ETYPE uint
#else
#define EBUF BufI64
#define ETYPE int64_t
#endif
