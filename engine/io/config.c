/* config.json reading: parse with jansson, typed getters whose errors name file and key. */
#include "io/config_internal.h"

#include "io/json_util.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static mt_config *config_wrap(json_t *obj, const char *name)
{
    mt_config *c = mt_xcalloc(1, sizeof *c);
    c->obj = obj;
    c->name = mt_xstrdup(name);
    c->prefix = mt_xstrdup("");
    c->root = c;
    return c;
}

mt_config *mt_config_new(const char *name)
{
    return config_wrap(json_object(), name ? name : "config");
}

mt_config *mt_config_parse(const char *text, size_t len, const char *name)
{
    name = name ? name : "config";
    json_error_t jerr;
    json_t *obj = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!obj) {
        mt_error("%s: not valid JSON: %s (line %d, column %d)", name, mt_error_oneline(jerr.text),
                 jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(obj)) {
        mt_error("%s: the top level is %s, expected a JSON object", name, json_kind(obj));
        json_decref(obj);
        return NULL;
    }
    return config_wrap(obj, name);
}

mt_config *mt_config_load(const char *path)
{
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        mt_error("%s: %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    if (sb.st_size > MT_CONFIG_MAX_BYTES) {
        mt_error("%s: %lld bytes, too large for a config file (limit %d)", path,
                 (long long)sb.st_size, MT_CONFIG_MAX_BYTES);
        fclose(f);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    char *text = mt_xmalloc(len + 1);
    size_t got = fread(text, 1, len, f);
    int read_error = ferror(f);
    fclose(f);
    if (read_error || got != len) {
        mt_error("%s: read failed (%zu of %zu bytes)", path, got, len);
        free(text);
        return NULL;
    }
    mt_config *c = mt_config_parse(text, len, path);
    free(text);
    return c;
}

void mt_config_free(mt_config *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_children; i++) mt_config_free(c->children[i]);
    free(c->children);
    json_decref(c->obj);
    free(c->name);
    free(c->prefix);
    free(c);
}

mt_config *config_child(const mt_config *c, const char *key, json_t *obj)
{
    /* handles are cached by object: asking twice for "ssm_cfg" gives the same handle */
    mt_config *root = c->root;
    for (int i = 0; i < root->n_children; i++)
        if (root->children[i]->obj == obj) return root->children[i];
    mt_config *child = mt_xcalloc(1, sizeof *child);
    child->obj = json_incref(obj);
    child->name = mt_xstrdup(root->name);
    char shown[160]; /* the prefix is only for messages, which must stay on one line */
    printable_text(shown, sizeof shown, key);
    size_t len = strlen(c->prefix) + strlen(shown) + 2;
    child->prefix = mt_xmalloc(len);
    snprintf(child->prefix, len, "%s%s.", c->prefix, shown);
    child->root = root;
    root->children =
        mt_xrealloc(root->children, (size_t)(root->n_children + 1) * sizeof *root->children);
    root->children[root->n_children++] = child;
    return child;
}

const char *mt_config_name(const mt_config *c) { return c->name; }

int mt_config_has(const mt_config *c, const char *key)
{
    const json_t *v = json_object_get(c->obj, key);
    return v && !json_is_null(v);
}

/* ---------------------------------------------------------------- errors */

static int missing_key(const mt_config *c, const char *key)
{
    char k[160];
    return mt_error("%s: missing key '%s%s'", c->name, c->prefix, printable_text(k, sizeof k, key));
}

/* "<file>: key 'x' must be <expected>, got <value>" */
static int bad_value(const mt_config *c, const char *key, const json_t *v, const char *fmt, ...)
    MT_PRINTF(4, 5);
static int bad_value(const mt_config *c, const char *key, const json_t *v, const char *fmt, ...)
{
    char expected[256], k[160], got[80];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(expected, sizeof expected, fmt, ap);
    va_end(ap);
    return mt_error("%s: key '%s%s' must be %s, got %s", c->name, c->prefix,
                    printable_text(k, sizeof k, key), expected, json_snippet(got, sizeof got, v));
}

static const char *int_range_text(char *buf, size_t len, int lo, int hi)
{
    if (lo == 1 && hi == INT_MAX) snprintf(buf, len, "a positive integer");
    else if (lo == 0 && hi == INT_MAX) snprintf(buf, len, "a non-negative integer");
    else if (lo == INT_MIN && hi == INT_MAX) snprintf(buf, len, "an integer");
    else snprintf(buf, len, "an integer from %d to %d", lo, hi);
    return buf;
}

static const char *int_list_text(char *buf, size_t len, int lo, int hi)
{
    if (lo == INT_MIN && hi == INT_MAX) snprintf(buf, len, "a list of integers");
    else if (hi == INT_MAX) snprintf(buf, len, "a list of integers >= %d", lo);
    else snprintf(buf, len, "a list of integers from %d to %d", lo, hi);
    return buf;
}

static const char *float_range_text(char *buf, size_t len, double lo, double hi)
{
    if (lo <= -FLT_MAX && hi >= FLT_MAX) snprintf(buf, len, "a number");
    else if (lo == 0 && hi >= FLT_MAX) snprintf(buf, len, "a non-negative number");
    else snprintf(buf, len, "a number from %g to %g", lo, hi);
    return buf;
}

/* The value of a key that must be present: NULL (with the error) when missing or null. */
static const json_t *required(const mt_config *c, const char *key)
{
    const json_t *v = json_object_get(c->obj, key);
    if (!v || json_is_null(v)) {
        if (v) bad_value(c, key, v, "set");
        else missing_key(c, key);
        return NULL;
    }
    return v;
}

/* ---------------------------------------------------------------- typed values */

static int int_value(const mt_config *c, const char *key, const json_t *v, int lo, int hi, int *out)
{
    char expected[96];
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return bad_value(c, key, v, "%s", int_range_text(expected, sizeof expected, lo, hi));
    *out = (int)json_integer_value(v);
    return 0;
}

static int float_value(const mt_config *c, const char *key, const json_t *v, double lo, double hi,
                       float *out)
{
    char expected[96];
    if (!json_is_number(v))
        return bad_value(c, key, v, "%s", float_range_text(expected, sizeof expected, lo, hi));
    double x = json_number_value(v);
    if (fabs(x) > FLT_MAX)
        return bad_value(c, key, v, "a number within the range of a 32-bit float");
    if (x < lo || x > hi)
        return bad_value(c, key, v, "%s", float_range_text(expected, sizeof expected, lo, hi));
    *out = (float)x;
    return 0;
}

static int bool_value(const mt_config *c, const char *key, const json_t *v, int *out)
{
    if (!json_is_boolean(v)) return bad_value(c, key, v, "true or false");
    *out = json_is_true(v);
    return 0;
}

int mt_config_int(const mt_config *c, const char *key, int lo, int hi, int *out)
{
    const json_t *v = required(c, key);
    return v ? int_value(c, key, v, lo, hi, out) : -1;
}

int mt_config_float(const mt_config *c, const char *key, double lo, double hi, float *out)
{
    const json_t *v = required(c, key);
    return v ? float_value(c, key, v, lo, hi, out) : -1;
}

int mt_config_bool(const mt_config *c, const char *key, int *out)
{
    const json_t *v = required(c, key);
    return v ? bool_value(c, key, v, out) : -1;
}

const char *mt_config_string(const mt_config *c, const char *key)
{
    const json_t *v = required(c, key);
    if (!v) return NULL;
    if (!json_is_string(v)) {
        bad_value(c, key, v, "a string");
        return NULL;
    }
    return json_string_value(v);
}

int mt_config_int_list(const mt_config *c, const char *key, int lo, int hi, int *out, int cap,
                       int *n)
{
    const json_t *v = required(c, key);
    if (!v) return -1;
    char expected[96];
    if (!json_is_array(v))
        return bad_value(c, key, v, "%s", int_list_text(expected, sizeof expected, lo, hi));
    if (json_array_size(v) > (size_t)cap)
        return bad_value(c, key, v, "a list of at most %d integers", cap);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
            return bad_value(c, key, v, "%s", int_list_text(expected, sizeof expected, lo, hi));
        out[i] = (int)json_integer_value(x);
    }
    *n = (int)json_array_size(v);
    return 0;
}

int mt_config_string_list(const mt_config *c, const char *key, const char **out, int cap, int *n)
{
    const json_t *v = required(c, key);
    if (!v) return -1;
    if (!json_is_array(v)) return bad_value(c, key, v, "a list of strings");
    if (json_array_size(v) > (size_t)cap)
        return bad_value(c, key, v, "a list of at most %d strings", cap);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_string(x)) return bad_value(c, key, v, "a list of strings");
        out[i] = json_string_value(x);
    }
    *n = (int)json_array_size(v);
    return 0;
}

const mt_config *mt_config_object(const mt_config *c, const char *key)
{
    const json_t *v = required(c, key);
    if (!v) return NULL;
    if (!json_is_object(v)) {
        bad_value(c, key, v, "an object");
        return NULL;
    }
    return config_child(c, key, (json_t *)v);
}

int mt_config_int_or(const mt_config *c, const char *key, int def, int lo, int hi, int *out)
{
    if (!mt_config_has(c, key)) return *out = def, 0;
    return int_value(c, key, json_object_get(c->obj, key), lo, hi, out);
}

int mt_config_float_or(const mt_config *c, const char *key, float def, double lo, double hi,
                       float *out)
{
    if (!mt_config_has(c, key)) return *out = def, 0;
    return float_value(c, key, json_object_get(c->obj, key), lo, hi, out);
}

int mt_config_bool_or(const mt_config *c, const char *key, int def, int *out)
{
    if (!mt_config_has(c, key)) return *out = def, 0;
    return bool_value(c, key, json_object_get(c->obj, key), out);
}

const char *mt_config_string_or(const mt_config *c, const char *key, const char *def)
{
    return mt_config_has(c, key) ? mt_config_string(c, key) : def;
}
