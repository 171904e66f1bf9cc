/*
 * Readable kernel names and kernel families.
 *
 * Demangling: Itanium-mangled names (_Z..., what hipcc and nvcc leave on
 * kernels such as composable_kernel's) go through libiberty's
 * cplus_demangle_v3 (libiberty-dev: a static library, and its demangler
 * files carry the exception that allows linking them into any program).
 * Chosen over the C++ runtime's __cxa_demangle, which is C-callable too,
 * because on Debian 12 (GCC 12's libstdc++) that one fails every mangled
 * name of the real traces in ../shared/traces: ck_tile kernels mangle
 * std::bfloat16_t as DF16b, newer than GCC 12, and composable_kernel's
 * template names nest deeper than its fixed recursion limit of 2048;
 * libiberty 20230104 reads both (DMGL_NO_RECURSE_LIMIT). Its work arrays
 * and its recursion are on the stack and grow with the name, so names
 * longer than DEMANGLE_MAX are left as they are: a few hundred KB of stack
 * at most, well inside a worker thread's 8 MB. It is reentrant (no global
 * state on the v3 path).
 *
 * A family is the name (demangled) without what makes one kernel many:
 * a leading "void ", the trailing parameter list, every template argument
 * list; then the first family rule that matches the demangled name
 * (rules.c: tile and ordinal suffixes, a template argument, a fixed name)
 * says what else goes. Two names with one family are the same kernel at
 * another tile, ordinal or template instance: /diff?by=family matches them.
 */
#include <ctype.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg_int.h"
#include "index/index.h"

#define DEMANGLE_MAX (8u << 10)

char *idx_demangle(const char *name)
{
  if (strncmp(name, "_Z", 2) != 0 || strlen(name) > DEMANGLE_MAX)
    return NULL;
  return cplus_demangle_v3(name,
                           DMGL_PARAMS | DMGL_ANSI | DMGL_NO_RECURSE_LIMIT);
}

/* The index of the '(' opening the parameter list that ends s (length n),
 * or n when s does not end with one. */
static size_t params_at(const char *s, size_t n)
{
  size_t i = n;
  int depth = 0;

  while (i > 0 && s[i - 1] == ' ')
    i--;
  if (i == 0 || s[i - 1] != ')')
    return n;
  while (i-- > 0) {
    if (s[i] == ')')
      depth++;
    else if (s[i] == '(' && --depth == 0)
      return i;
  }
  return n;
}

/* s (length n) without a leading "void ", its trailing parameter list and
 * its template argument lists, into out (room for n + 1). Returns the
 * length. "(anonymous namespace)" and lambdas ({lambda(int)#1}) stay. */
static size_t strip(const char *s, size_t n, char *out)
{
  size_t i, len = 0;
  int depth = 0;

  if (n >= 5 && memcmp(s, "void ", 5) == 0) {
    s += 5;
    n -= 5;
  }
  n = params_at(s, n);
  for (i = 0; i < n; i++) {
    if (s[i] == '<')
      depth++;
    else if (s[i] == '>' && depth > 0)
      depth--;
    else if (depth == 0)
      out[len++] = s[i];
  }
  while (len > 0 && out[len - 1] == ' ')
    len--;
  out[len] = '\0';
  return len;
}

/* Where the first tile field _<letters><digits>x<digits> starts, or n. */
static size_t tile_at(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    size_t j = i + 1, d;

    if (s[i] != '_')
      continue;
    while (j < n && isalpha((unsigned char)s[j]) && s[j] != 'x')
      j++;
    for (d = j; d < n && isdigit((unsigned char)s[d]); d++)
      ;
    if (d > j && d + 1 < n && s[d] == 'x' && isdigit((unsigned char)s[d + 1]))
      return i;
  }
  return n;
}

/* The length of s without one trailing _<digits>. */
static size_t ordinal_cut(const char *s, size_t n)
{
  size_t i = n;

  while (i > 0 && isdigit((unsigned char)s[i - 1]))
    i--;
  return i < n && i > 1 && s[i - 1] == '_' ? i - 1 : n;
}

/* The arg-th (from 1) argument of s's first template argument list, as
 * [*from, *from + *len); 0 when there is none. */
static int template_arg(const char *s, size_t n, int arg, size_t *from,
                        size_t *len)
{
  const char *lt = memchr(s, '<', n);
  size_t i, start;
  int depth = 0, at = 1;

  if (lt == NULL)
    return 0;
  for (i = start = (size_t)(lt - s) + 1; i < n; i++) {
    if (s[i] == '<' || s[i] == '(')
      depth++;
    else if ((s[i] == '>' || s[i] == ')') && depth > 0)
      depth--;
    else if (depth == 0 && (s[i] == ',' || s[i] == '>')) {
      if (at == arg) {
        while (start < i && s[start] == ' ')
          start++;
        *from = start;
        *len = i - start;
        return 1;
      }
      if (s[i] == '>')
        return 0;
      at++;
      start = i + 1;
    }
  }
  return 0;
}

char *idx_family(const struct idx_rules *rules, const char *name)
{
  char *dem = idx_demangle(name), *out = agg_family_of(rules, name, dem);

  free(dem);
  return out;
}

char *agg_family_of(const struct idx_rules *rules, const char *name,
                    const char *demangled)
{
  const char *d = demangled ? demangled : name;
  size_t n = strlen(d), from = 0, len;
  struct agg_family_rule r = { AGG_FAM_KEEP, 0, NULL };
  char *out;

  if (agg_family_rule(rules, d, &r) && r.action == AGG_FAM_AS)
    return strdup(r.as);
  if ((out = malloc(n + 1)) == NULL)
    return NULL;
  if (r.action == AGG_FAM_ARG && template_arg(d, n, r.arg, &from, &len))
    n = len;
  n = strip(d + from, n, out);
  if (r.action == AGG_FAM_TILE && tile_at(out, n) > 0)
    n = tile_at(out, n);
  else if (r.action == AGG_FAM_ORDINAL)
    n = ordinal_cut(out, n);
  out[n] = '\0';
  return out;
}
