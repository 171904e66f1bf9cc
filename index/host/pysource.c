/*
 * Which Python frames are the model's code (hoststack.h, hs_py_source()).
 * PyTorch's tracer writes a frame "<file>(<line>): <function>" with the
 * file relative to the sys.path entry it was found under (site-packages,
 * the standard library's folder, an editable install's root), or absolute
 * when no entry holds it. The model's code is a frame outside torch, the
 * standard library and site-packages: a relative file whose top package
 * is neither the standard library's (Python 3.11's
 * sys.stdlib_module_names) nor one of the libraries below that run ops
 * and launch kernels for the model (torch and its kin, Triton, the kernel
 * libraries), or an absolute one under none of the interpreter's folders.
 * An installed model library (transformers, vLLM, SGLang, ATOM) is the
 * model's code by this rule: its relative path says no more; so an
 * absolute frame, surely the model's, is preferred to a relative one
 * (HS_SRC over HS_SRC_PKG: decode's identity).
 */
#include <stdlib.h>
#include <string.h>

#include "index/host/host.h"

/* Sorted (strcmp): bsearch. */
static const char *const stdlib_names[] = {
  "abc",
  "aifc",
  "antigravity",
  "argparse",
  "array",
  "ast",
  "asynchat",
  "asyncio",
  "asyncore",
  "atexit",
  "audioop",
  "base64",
  "bdb",
  "binascii",
  "bisect",
  "builtins",
  "bz2",
  "cProfile",
  "calendar",
  "cgi",
  "cgitb",
  "chunk",
  "cmath",
  "cmd",
  "code",
  "codecs",
  "codeop",
  "collections",
  "colorsys",
  "compileall",
  "concurrent",
  "configparser",
  "contextlib",
  "contextvars",
  "copy",
  "copyreg",
  "crypt",
  "csv",
  "ctypes",
  "curses",
  "dataclasses",
  "datetime",
  "dbm",
  "decimal",
  "difflib",
  "dis",
  "distutils",
  "doctest",
  "email",
  "encodings",
  "ensurepip",
  "enum",
  "errno",
  "faulthandler",
  "fcntl",
  "filecmp",
  "fileinput",
  "fnmatch",
  "fractions",
  "ftplib",
  "functools",
  "gc",
  "genericpath",
  "getopt",
  "getpass",
  "gettext",
  "glob",
  "graphlib",
  "grp",
  "gzip",
  "hashlib",
  "heapq",
  "hmac",
  "html",
  "http",
  "idlelib",
  "imaplib",
  "imghdr",
  "imp",
  "importlib",
  "inspect",
  "io",
  "ipaddress",
  "itertools",
  "json",
  "keyword",
  "lib2to3",
  "linecache",
  "locale",
  "logging",
  "lzma",
  "mailbox",
  "mailcap",
  "marshal",
  "math",
  "mimetypes",
  "mmap",
  "modulefinder",
  "msilib",
  "msvcrt",
  "multiprocessing",
  "netrc",
  "nis",
  "nntplib",
  "nt",
  "ntpath",
  "nturl2path",
  "numbers",
  "opcode",
  "operator",
  "optparse",
  "os",
  "ossaudiodev",
  "pathlib",
  "pdb",
  "pickle",
  "pickletools",
  "pipes",
  "pkgutil",
  "platform",
  "plistlib",
  "poplib",
  "posix",
  "posixpath",
  "pprint",
  "profile",
  "pstats",
  "pty",
  "pwd",
  "py_compile",
  "pyclbr",
  "pydoc",
  "pydoc_data",
  "pyexpat",
  "queue",
  "quopri",
  "random",
  "re",
  "readline",
  "reprlib",
  "resource",
  "rlcompleter",
  "runpy",
  "sched",
  "secrets",
  "select",
  "selectors",
  "shelve",
  "shlex",
  "shutil",
  "signal",
  "site",
  "smtpd",
  "smtplib",
  "sndhdr",
  "socket",
  "socketserver",
  "spwd",
  "sqlite3",
  "sre_compile",
  "sre_constants",
  "sre_parse",
  "ssl",
  "stat",
  "statistics",
  "string",
  "stringprep",
  "struct",
  "subprocess",
  "sunau",
  "symtable",
  "sys",
  "sysconfig",
  "syslog",
  "tabnanny",
  "tarfile",
  "telnetlib",
  "tempfile",
  "termios",
  "textwrap",
  "this",
  "threading",
  "time",
  "timeit",
  "tkinter",
  "token",
  "tokenize",
  "tomllib",
  "trace",
  "traceback",
  "tracemalloc",
  "tty",
  "turtle",
  "turtledemo",
  "types",
  "typing",
  "unicodedata",
  "unittest",
  "urllib",
  "uu",
  "uuid",
  "venv",
  "warnings",
  "wave",
  "weakref",
  "webbrowser",
  "winreg",
  "winsound",
  "wsgiref",
  "xdrlib",
  "xml",
  "xmlrpc",
  "zipapp",
  "zipfile",
  "zipimport",
  "zlib",
  "zoneinfo",
};

/* The libraries that run the model's ops rather than being it. */
static const char *const libraries[] = {
  "accelerate",
  "aiter",
  "apex",
  "deep_gemm",
  "flash_attn",
  "flashinfer",
  "numpy",
  "sgl_kernel",
  "torch",
  "torchaudio",
  "torchvision",
  "tqdm",
  "transformer_engine",
  "triton",
};

/* Folders of an interpreter's own files in an absolute path. */
static const char *const folders[] = { "/site-packages/", "/dist-packages/",
                                       "/lib/python" };

static int cmp(const void *k, const void *e)
{
  return strcmp(k, *(const char *const *)e);
}

static int listed(const char *top, const char *const *v, size_t n)
{
  return bsearch(top, v, n, sizeof(*v), cmp) != NULL;
}

/* The file of a frame "<file>(<line>): ...": its length, 0 when the text
 * is no such frame. */
static size_t file_len(const char *p, size_t n)
{
  size_t i = 0, j;

  while (i < n && p[i] != '(')
    i++;
  for (j = i + 1; j < n && p[j] >= '0' && p[j] <= '9'; j++)
    ;
  if (i == 0 || j == i + 1 || n - j < 3 || memcmp(p + j, "): ", 3) != 0)
    return 0;
  return i;
}

int hs_py_source(const char *p, size_t n)
{
  size_t f = file_len(p, n), t = 0;
  char top[32];

  if (f == 0 || p[0] == '<')
    return 0; /* a builtin, <frozen ...>, <string> */
  if (p[0] == '/') {
    for (size_t i = 0; i < sizeof(folders) / sizeof(folders[0]); i++)
      if (memmem(p, f, folders[i], strlen(folders[i])) != NULL)
        return 0;
    return HS_SRC;
  }
  while (t < f && p[t] != '/' && p[t] != '.' && t < sizeof(top) - 1)
    t++;
  memcpy(top, p, t);
  top[t] = '\0';
  if (listed(top, stdlib_names,
             sizeof(stdlib_names) / sizeof(stdlib_names[0])) ||
      listed(top, libraries, sizeof(libraries) / sizeof(libraries[0])))
    return 0;
  return HS_SRC_PKG;
}
