/* The config.json handle, shared by the reader (config.c) and the writer (config_write.c). */
#ifndef MTLAB_IO_CONFIG_INTERNAL_H
#define MTLAB_IO_CONFIG_INTERNAL_H

#include "mtlab/bundle.h"

#include <jansson.h>

struct mt_config {
    json_t *obj; /* the object this handle shows (one reference held) */
    char *name; /* file name for messages */
    char *prefix; /* "" for the root, "ssm_cfg." for a nested object */
    mt_config *root; /* itself for the root */
    mt_config **children; /* (n_children) root only: every nested handle handed out */
    int n_children;
};

/* The handle of nested object obj under key (created once, owned by c's root). */
mt_config *config_child(const mt_config *c, const char *key, json_t *obj);

#endif
