/* opus-mt tokenizers: source.spm + target.spm + vocab.json (marian_vocab.h). */
#include "tokenizer/marian_vocab.h"
#include "tokenizer/spm_boundary.h"

#include <jansson.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "mtlab/error.h"
#include "mtlab/files.h"
}

/* One vocabulary file: piece <-> id, every id below its size given once. */
struct vocab_map {
    std::vector<std::string> pieces; /* (V) id -> piece */
    std::unordered_map<std::string, int> ids; /* piece -> id */
};

struct marian_vocab {
    sentencepiece::SentencePieceProcessor source, target;
    vocab_map src; /* vocab.json: the source's ids */
    vocab_map tgt; /* target_vocab.json where the vocabularies are separate, else src */
    bool separate = false;
    int eos = -1, pad = -1, unk = -1;
    std::string vocab_path, target_vocab_path;
    const vocab_map &out() const { return separate ? tgt : src; }
};

static std::string member(const char *dir, const char *name)
{
    std::string path = dir;
    if (!path.empty() && path.back() != '/') path += '/';
    return path + name;
}

extern "C" int marian_vocab_in_dir(const char *dir)
{
    return mt_file_check(member(dir, "source.spm").c_str(), MT_FILE_REGULAR) == 0;
}

static int load_spm(sentencepiece::SentencePieceProcessor *sp, const char *dir, const char *name)
{
    const std::string path = member(dir, name);
    if (mt_file_check(path.c_str(), MT_FILE_REGULAR) != 0)
        return mt_error_context("%s: an opus-mt tokenizer needs source.spm, target.spm and "
                                "vocab.json",
                                dir);
    const auto status = sp->Load(path);
    if (!status.ok())
        return mt_error("%s: not a sentencepiece model (%s)", path.c_str(),
                        spm_status_text(status).c_str());
    return 0;
}

/* One of the three tokens MarianTokenizer requires: its id, or -1 with the error. */
static int special(const vocab_map &map, const char *path, const char *piece, const char *role)
{
    auto it = map.ids.find(piece);
    if (it == map.ids.end())
        return mt_error("%s: no entry '%s' (MarianTokenizer's %s)", path, piece, role);
    return it->second;
}

static int load_vocab(vocab_map *mv, const char *path, const char *dir)
{
    if (mt_file_check(path, MT_FILE_REGULAR) != 0)
        return mt_error_context("%s: an opus-mt tokenizer needs source.spm, target.spm and "
                                "%s",
                                dir, strrchr(path, '/') + 1);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return mt_error("%s:%d: %s", path, jerr.line, jerr.text);
    int rc = 0;
    if (!json_is_object(root)) rc = mt_error("%s: not a JSON object of piece -> id", path);
    const size_t n = rc ? 0 : json_object_size(root);
    if (!rc && (n == 0 || n > (1u << 22)))
        rc = mt_error("%s: %zu entries (1 to %u)", path, n, 1u << 22);
    mv->pieces.assign(n, std::string());
    std::vector<char> seen(n, 0);
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        if (rc) break;
        const json_int_t id = json_is_integer(value) ? json_integer_value(value) : -1;
        if (id < 0 || (size_t)id >= n) {
            rc = mt_error("%s: key '%s': the id must be an integer in 0..%zu", path, key, n - 1);
        } else if (seen[(size_t)id]) {
            rc = mt_error("%s: id %lld is given to both '%s' and '%s'", path, (long long)id,
                          mv->pieces[(size_t)id].c_str(), key);
        } else {
            seen[(size_t)id] = 1;
            mv->pieces[(size_t)id] = key;
            mv->ids.emplace(key, (int)id);
        }
    }
    json_decref(root);
    return rc ? -1 : 0; /* n distinct ids below n: every id has its piece */
}

/* MarianTokenizer reads target_vocab.json only where tokenizer_config.json's separate_vocabs
 * is true: 1, 0, or -1 with the error. */
static int separate_vocabs(const char *dir)
{
    const std::string cfg = member(dir, "tokenizer_config.json");
    if (mt_file_check(cfg.c_str(), MT_FILE_REGULAR) != 0) return 0;
    json_error_t jerr;
    json_t *root = json_load_file(cfg.c_str(), 0, &jerr);
    if (!root) return mt_error("%s:%d: %s", cfg.c_str(), jerr.line, jerr.text);
    const json_t *sep = json_is_object(root) ? json_object_get(root, "separate_vocabs") : nullptr;
    const bool separate = sep && json_is_true(sep);
    json_decref(root);
    return separate ? 1 : 0;
}

/* The source's </s>, <pad> and <unk> (MarianTokenizer's special ids, which decoding skips),
 * and the target vocabulary's, which must be the same ids: the model has one eos and pad. */
static int load_specials(marian_vocab *mv)
{
    const char *path = mv->vocab_path.c_str();
    if ((mv->eos = special(mv->src, path, "</s>", "eos_token")) < 0 ||
        (mv->pad = special(mv->src, path, "<pad>", "pad_token")) < 0 ||
        (mv->unk = special(mv->src, path, "<unk>", "unk_token")) < 0)
        return -1;
    if (!mv->separate) return 0;
    const char *tpath = mv->target_vocab_path.c_str();
    static const char *const pieces[] = {"</s>", "<pad>", "<unk>"};
    const int want[] = {mv->eos, mv->pad, mv->unk};
    for (int k = 0; k < 3; k++) {
        const int id = special(mv->tgt, tpath, pieces[k], "target vocabulary's");
        if (id < 0) return -1;
        if (id != want[k])
            return mt_error("%s: '%s' is id %d, in %s id %d: the two vocabularies must give the "
                            "special tokens the same ids",
                            tpath, pieces[k], id, path, want[k]);
    }
    if (mv->tgt.pieces.size() != mv->src.pieces.size())
        return mt_error("%s: %zu entries, %s %zu: vocabularies of two sizes are not supported "
                        "(transformers' MarianMTModel gives the decoder's embedding vocab_size "
                        "rows)",
                        tpath, mv->tgt.pieces.size(), path, mv->src.pieces.size());
    return 0;
}

extern "C" marian_vocab *marian_vocab_load(const char *dir)
{
    return spm_guarded(dir, (marian_vocab *)nullptr, [&]() -> marian_vocab * {
        std::unique_ptr<marian_vocab> mv(new marian_vocab);
        mv->vocab_path = member(dir, "vocab.json");
        mv->target_vocab_path = member(dir, "target_vocab.json");
        if (load_spm(&mv->source, dir, "source.spm") || load_spm(&mv->target, dir, "target.spm"))
            return nullptr;
        const int separate = separate_vocabs(dir);
        if (separate < 0 || load_vocab(&mv->src, mv->vocab_path.c_str(), dir)) return nullptr;
        mv->separate = separate == 1;
        if (mv->separate && load_vocab(&mv->tgt, mv->target_vocab_path.c_str(), dir))
            return nullptr;
        if (load_specials(mv.get())) return nullptr;
        return mv.release();
    });
}

extern "C" void marian_vocab_free(marian_vocab *mv) { delete mv; }

extern "C" const char *marian_vocab_path(const marian_vocab *mv) { return mv->vocab_path.c_str(); }
extern "C" int marian_vocab_size(const marian_vocab *mv) { return (int)mv->src.pieces.size(); }
extern "C" int marian_vocab_eos(const marian_vocab *mv) { return mv->eos; }
extern "C" int marian_vocab_pad(const marian_vocab *mv) { return mv->pad; }
extern "C" int marian_vocab_unk(const marian_vocab *mv) { return mv->unk; }

extern "C" const char *marian_vocab_id_to_piece(const marian_vocab *mv, int id)
{
    const vocab_map &map = mv->out();
    if (id < 0 || (size_t)id >= map.pieces.size()) return nullptr;
    return map.pieces[(size_t)id].c_str();
}

extern "C" int marian_vocab_piece_to_id(const marian_vocab *mv, const char *piece)
{
    if (!piece) return -1;
    auto it = mv->out().ids.find(piece);
    return it == mv->out().ids.end() ? -1 : it->second;
}

static int lookup(const marian_vocab *mv, const std::string &piece)
{
    auto it = mv->src.ids.find(piece);
    return it == mv->src.ids.end() ? mv->unk : it->second;
}

extern "C" int marian_vocab_encode(const marian_vocab *mv, const char *text, size_t len, int **ids,
                                   size_t *n)
{
    return spm_guarded(mv->vocab_path.c_str(), -1, [&] {
        std::string_view rest(text, len);
        std::vector<int> out;
        /* MarianTokenizer.remove_language_code: ">>" at the start up to the first "<<" */
        if (rest.substr(0, 2) == ">>") {
            const size_t end = rest.find("<<");
            if (end != std::string_view::npos) {
                out.push_back(lookup(mv, std::string(rest.substr(0, end + 2))));
                rest.remove_prefix(end + 2);
            }
        }
        /* a special token typed in the text is that token (MarianTokenizer splits them out
         * first); the text between is segmented on its own */
        static const char *const specials[] = {"</s>", "<unk>", "<pad>"};
        while (!rest.empty()) {
            size_t at = std::string_view::npos, special_len = 0;
            const char *special = nullptr;
            for (const char *sp : specials) {
                const size_t found = rest.find(sp);
                if (found < at) at = found, special = sp, special_len = strlen(sp);
            }
            std::vector<std::string> pieces;
            const auto status = mv->source.Encode(rest.substr(0, at), &pieces);
            if (!status.ok())
                return mt_error("%s: encode failed: %s", mv->vocab_path.c_str(),
                                spm_status_text(status).c_str());
            for (const std::string &p : pieces) out.push_back(lookup(mv, p));
            if (!special) break;
            out.push_back(lookup(mv, special));
            rest.remove_prefix(at + special_len);
        }
        *ids = (int *)mt_xmalloc((out.size() ? out.size() : 1) * sizeof(int));
        if (!out.empty()) memcpy(*ids, out.data(), out.size() * sizeof(int));
        *n = out.size();
        return 0;
    });
}

extern "C" char *marian_vocab_decode(const marian_vocab *mv, const int *ids, size_t n)
{
    const char *name = mv->vocab_path.c_str();
    return spm_guarded(name, (char *)nullptr, [&]() -> char * {
        const vocab_map &map = mv->out();
        std::vector<std::string> pieces;
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || (size_t)ids[i] >= map.pieces.size()) {
                mt_error("%s: cannot decode id %d (position %zu): the vocabulary has ids 0..%zu",
                         name, ids[i], i, map.pieces.size() - 1);
                return nullptr;
            }
            if (ids[i] != mv->eos && ids[i] != mv->pad && ids[i] != mv->unk)
                pieces.push_back(map.pieces[(size_t)ids[i]]);
        }
        std::string text;
        const auto status = mv->target.Decode(pieces, &text);
        if (!status.ok()) {
            mt_error("%s: decode failed: %s", name, spm_status_text(status).c_str());
            return nullptr;
        }
        /* convert_tokens_to_string: "▁" as a space, then str.strip() */
        std::string spaced;
        for (size_t i = 0; i < text.size(); i++) {
            if (text.compare(i, 3, "\xe2\x96\x81") == 0) {
                spaced += ' ';
                i += 2;
            } else {
                spaced += text[i];
            }
        }
        const char *ws = " \t\n\r\f\v";
        const size_t b = spaced.find_first_not_of(ws);
        const size_t e = spaced.find_last_not_of(ws);
        return mt_xstrdup(b == std::string::npos ? "" : spaced.substr(b, e - b + 1).c_str());
    });
}
