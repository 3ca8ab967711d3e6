/* config.json writing: setters, key listing, and the pretty, sorted, atomic save. */
#include "io/atomic_file.h"
#include "io/config_internal.h"

#include "io/json_util.h"
#include "mtlab/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Takes the reference to v (NULL when jansson refused a string). */
static int set_value(mt_config *c, const char *key, json_t *v)
{
    if (!key || !v || json_object_set_new(c->obj, key, v)) {
        char k[160];
        return mt_error("%s: cannot set key '%s%s': key or value is not valid UTF-8", c->name,
                        c->prefix, key ? printable_text(k, sizeof k, key) : "(null)");
    }
    return 0;
}

int mt_config_set_int(mt_config *c, const char *key, long long v)
{
    return set_value(c, key, json_integer(v));
}

/* The shortest "%.{p}g" that strtof reads back as v: stored as that decimal's double, it is
 * written as the decimal that was meant ("1e-05"), not as the float's exact binary value. */
int mt_config_set_float(mt_config *c, const char *key, float v)
{
    if (!isfinite(v)) {
        char k[160];
        return mt_error("%s: cannot set key '%s%s' to %g: JSON has no inf or nan", c->name,
                        c->prefix, key ? printable_text(k, sizeof k, key) : "(null)", (double)v);
    }
    char text[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)v);
        if (strtof(text, NULL) == v) break;
    }
    return set_value(c, key, json_real(strtod(text, NULL)));
}

int mt_config_set_bool(mt_config *c, const char *key, int v)
{
    return set_value(c, key, json_boolean(v));
}

int mt_config_set_null(mt_config *c, const char *key) { return set_value(c, key, json_null()); }

int mt_config_set_string(mt_config *c, const char *key, const char *v)
{
    return set_value(c, key, v ? json_string(v) : NULL);
}

int mt_config_set_int_list(mt_config *c, const char *key, const int *v, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(list, json_integer(v[i]));
    return set_value(c, key, list);
}

int mt_config_set_string_list(mt_config *c, const char *key, const char *const *v, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        json_t *s = v[i] ? json_string(v[i]) : NULL;
        if (!s) {
            json_decref(list);
            return set_value(c, key, NULL);
        }
        json_array_append_new(list, s);
    }
    return set_value(c, key, list);
}

mt_config *mt_config_set_object(mt_config *c, const char *key)
{
    json_t *obj = json_object();
    if (set_value(c, key, json_incref(obj))) {
        json_decref(obj);
        return NULL;
    }
    mt_config *child = config_child(c, key, obj);
    json_decref(obj);
    return child;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **mt_config_keys(const mt_config *c, int *n)
{
    size_t count = json_object_size(c->obj), i = 0;
    const char **keys = mt_xmalloc((count ? count : 1) * sizeof *keys);
    const char *key;
    json_t *value;
    json_object_foreach(c->obj, key, value) keys[i++] = key;
    qsort(keys, count, sizeof *keys, by_string);
    *n = (int)count;
    return keys;
}

char *mt_config_value_json(const mt_config *c, const char *key)
{
    const json_t *v = json_object_get(c->obj, key);
    return v ? json_text(v, 0, 0) : NULL;
}

char *mt_config_to_text(const mt_config *c)
{
    char *json = json_text(c->obj, 2, 1);
    size_t len = strlen(json);
    char *text = mt_xrealloc(json, len + 2);
    text[len] = '\n';
    text[len + 1] = '\0';
    return text;
}

int mt_config_save(const mt_config *c, const char *path)
{
    char *text = mt_config_to_text(c);
    if (!text) return mt_error("%s: cannot encode the configuration", path);
    int rc = atomic_file_replace(path, text, strlen(text));
    free(text);
    return rc;
}
