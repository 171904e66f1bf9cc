/*
 * ATOM's own option sets, as ATOM ffdf3bb5 declares them (docs/ATOM.md,
 * "What a request may pass"): the server's (EngineArgs.add_cli_args in
 * atom/model_engine/arg_utils.py, then the API server's options in
 * atom/entrypoints/openai/api_server.py main) and the bench client's
 * (atom/benchmarks/benchmark_serving.py). Each option with the spellings
 * ATOM's FlexibleArgumentParser accepts (atom/utils/arg_parser.py: an
 * option added to the parser itself answers to --kebab-case and
 * --snake_case; one added through an argument group keeps its own), how
 * many values it takes, and what its value is, which decides what a
 * capture request may do with it (atom/policy.c) and how the plan reads an
 * argv (atom/plan.c).
 *
 * Pure tables and string work: any thread.
 */
#ifndef TR_ATOM_OPTS_H
#define TR_ATOM_OPTS_H

#include <stdbool.h>
#include <stddef.h>

/* Which program an option belongs to. */
enum tr_atom_prog { TR_ATOM_SERVER, TR_ATOM_BENCH };

/* How many value words an option takes (argparse nargs). */
enum tr_opt_arity {
  TR_ARITY_NONE,     /* store_true, BooleanOptionalAction */
  TR_ARITY_ONE,      /* one value */
  TR_ARITY_OPTIONAL, /* nargs="?": the next word unless it is an option */
  TR_ARITY_MANY      /* nargs="+" or "*": every word up to the next option */
};

/* What an option's value is, and so what a request may give. */
enum tr_opt_value {
  TR_VAL_NONE,      /* a switch */
  TR_VAL_INT,       /* int() */
  TR_VAL_FLOAT,     /* float() */
  TR_VAL_CHOICE,    /* one of choices */
  TR_VAL_TEXT,      /* a name or a literal, never opened */
  TR_VAL_JSON,      /* a JSON document (json.loads) */
  TR_VAL_PATH,      /* a file or folder opened or written: under
                       model_roots */
  TR_VAL_MODEL,     /* a model folder (under model_roots) or a hub id */
  TR_VAL_TEMPLATE,  /* --chat-template: a file path or an inline
                       template */
  TR_VAL_TRUST,     /* --trust-remote-code: runs the model's own code */
  TR_VAL_ADDRESS,   /* names an address: traced's alone */
  TR_VAL_OWN,       /* traced sets it from the request's own members */
  TR_VAL_MULTINODE  /* a deployment spanning nodes or processes */
};

struct tr_atom_opt {
  const char *names;   /* option strings as ATOM registers them, '|'
                          separated, the first the canonical one */
  bool both;           /* added to the parser itself: each long name also
                          answers to its other spelling */
  enum tr_opt_arity arity;
  enum tr_opt_value value;
  const char *choices; /* TR_VAL_CHOICE: '|' separated; else NULL */
  const char *why;     /* TR_VAL_OWN, _ADDRESS, _MULTINODE: why a request
                          may not give it */
};

/* The option of prog that word names (a word starting with '-', up to an
 * '=' if any), by one of its exact spellings, or NULL: an unknown word, or
 * an abbreviation (argparse takes a unique prefix; traced judges only full
 * names, so that what it judges is what ATOM parses). */
const struct tr_atom_opt *tr_atom_opt_find(enum tr_atom_prog prog,
                                           const char *word);

/* The canonical name of o (its first option string), into buf. */
const char *tr_atom_opt_name(const struct tr_atom_opt *o, char *buf,
                             size_t size);

/* True when word is an option word for argparse: it starts with '-' and is
 * not a negative number ("-1", "-0.5"). */
bool tr_atom_is_option(const char *word);

/* True when value is one of o's choices. */
bool tr_atom_opt_choice(const struct tr_atom_opt *o, const char *value);

/* The value of the last occurrence of option canonical (e.g.
 * "--max-num-seqs") in a NULL-terminated argv of prog ("--x v" or
 * "--x=v"), or NULL; borrowed from argv. An option given without its value
 * counts as absent. */
const char *tr_atom_opt_last(enum tr_atom_prog prog, char *const *argv,
                             const char *canonical);

/* True when option canonical is given anywhere in argv. */
bool tr_atom_opt_given(enum tr_atom_prog prog, char *const *argv,
                       const char *canonical);

#endif
