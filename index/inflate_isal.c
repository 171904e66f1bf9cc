/* The ISA-L inflater (see inflate.h): igzip's streaming isal_inflate(),
 * which reads the gzip header and checks the CRC itself (ISAL_GZIP). */
#ifdef TRACED_HAVE_ISAL

#include <isa-l/igzip_lib.h>
#include <stdlib.h>

#include "common/tr.h"
#include "index/inflate.h"

struct idx_inflate {
  struct inflate_state st; /* ~40 KB: history and Huffman tables */
};

int idx_inflate_new(struct idx_inflate **out)
{
  struct idx_inflate *z = malloc(sizeof(*z));

  if (z == NULL)
    return TR_ENOMEM;
  idx_inflate_reset(z);
  *out = z;
  return 0;
}

void idx_inflate_reset(struct idx_inflate *z)
{
  isal_inflate_init(&z->st);
  z->st.crc_flag = ISAL_GZIP;
}

/* A person's words for an isal_inflate() error. */
static const char *describe(int rc)
{
  switch (rc) {
  case ISAL_INCORRECT_CHECKSUM: return "gzip CRC mismatch";
  case ISAL_INVALID_WRAPPER: return "bad gzip header";
  case ISAL_UNSUPPORTED_METHOD: return "gzip method is not deflate";
  default: return "corrupt deflate data";
  }
}

int idx_inflate_run(struct idx_inflate *z, struct idx_inflate_io *io,
                    const char **what)
{
  int rc;

  /* avail_in/avail_out are 32-bit: source.c's buffers are far smaller. */
  z->st.next_in = (uint8_t *)io->in;
  z->st.avail_in = (uint32_t)io->in_len;
  z->st.next_out = io->out;
  z->st.avail_out = (uint32_t)io->out_len;
  rc = isal_inflate(&z->st);
  io->in = z->st.next_in;
  io->in_len = z->st.avail_in;
  io->out = z->st.next_out;
  io->out_len = z->st.avail_out;
  if (rc < 0) {
    *what = describe(rc);
    return TR_EFORMAT;
  }
  return z->st.block_state == ISAL_BLOCK_FINISH;
}

const char *idx_inflate_name(void)
{
  return "isal";
}

void idx_inflate_free(struct idx_inflate *z)
{
  free(z);
}

#endif
