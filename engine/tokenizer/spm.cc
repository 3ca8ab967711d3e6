/* The mtlab tokenizer API over sentencepiece: load, encode, decode, vocabulary look-ups.
 * Training is in spm_train.cc. Every entry point is extern "C" and catches every exception.
 * A Hugging Face tokenizer.json (byte-level BPE) is read by hf_bpe.c: loading tells the two
 * apart by content, and every entry point hands such a tokenizer over to it. A directory holds
 * one of these, or an opus-mt checkpoint's source.spm + target.spm + vocab.json
 * (marian_vocab.cc). */
#include "tokenizer/hf_bpe.h"
#include "tokenizer/marian_vocab.h"
#include "tokenizer/spm_boundary.h"
#include "tokenizer/token_find.h"
#include "tokenizer/token_label.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/stat.h>
#include <string>
#include <vector>

extern "C" {
#include "mtlab/files.h"
#include "mtlab/tokenizer.h"
#include "mtlab/utf8.h"
}

struct mt_tokenizer {
    sentencepiece::SentencePieceProcessor sp;
    hf_bpe *bpe = nullptr; /* a tokenizer.json instead of sp */
    marian_vocab *marian = nullptr; /* an opus-mt directory's tokenizer instead of sp */
    bool reserved_ids = false; /* sp holds mtlab's reserved ids (checked at load) */
    std::string name; /* file (or bundle member) the model came from, for messages */
};

/* Real models are a few MB; anything far larger is not one, and reading it would only waste
 * memory before the parser says so. */
static const long MAX_MODEL_BYTES = 256L << 20;

/* A tokenizer.json's tokenizer; NULL with the error. */
static mt_tokenizer *load_json(const void *data, size_t len, const char *name)
{
    hf_bpe *bpe = hf_bpe_load_bytes(data, len, name);
    if (!bpe) return nullptr;
    mt_tokenizer *tok = new mt_tokenizer;
    tok->name = name;
    tok->bpe = bpe;
    return tok;
}

static const char *const RESERVED_PIECES[] = {"<pad>", "<eos>", "<sep>", "<bos>", "<unk>"};

/* A piece as an error message may quote it: control bytes as \xNN (a message is one line),
 * at most 40 bytes of it. */
static std::string quotable(const std::string &piece)
{
    std::string out;
    for (size_t i = 0; i < piece.size() && i < 40; i++) {
        unsigned char c = (unsigned char)piece[i];
        if (c < 0x20 || c == 0x7f) {
            char hex[8];
            snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += (char)c;
        }
    }
    if (piece.size() > 40) out += "...";
    return out;
}

/* The reserved ids are what every mtlab model relies on (decoder-only models read
 * "src <sep> tgt <eos>"), so a model with another layout is refused rather than half-working. */
static int check_reserved_ids(const mt_tokenizer *tok)
{
    const char *name = tok->name.c_str();
    const int n = tok->sp.GetPieceSize();
    if (n <= MT_UNK_ID)
        return mt_error("%s: vocabulary of %d pieces is too small to hold the reserved ids 0..%d",
                        name, n, MT_UNK_ID);
    for (int id = 0; id <= MT_UNK_ID; id++) {
        const std::string &piece = tok->sp.IdToPiece(id);
        if (piece != RESERVED_PIECES[id])
            return mt_error("%s: not an mtlab tokenizer: id %d is '%s', expected the reserved "
                            "piece '%s' (train one with `mtlab tokenizer train`)",
                            name, id, quotable(piece).c_str(), RESERVED_PIECES[id]);
        const bool is_unk = id == MT_UNK_ID;
        if (is_unk ? !tok->sp.IsUnknown(id) : !tok->sp.IsControl(id))
            return mt_error("%s: not an mtlab tokenizer: id %d '%s' is not marked as %s", name, id,
                            piece.c_str(), is_unk ? "the unknown piece" : "a control symbol");
    }
    return 0;
}

static mt_tokenizer *load_bytes(const void *data, size_t len, const char *name_for_errors,
                                bool reserved_ids)
{
    const char *name = name_for_errors ? name_for_errors : "tokenizer";
    return spm_guarded(name, (mt_tokenizer *)nullptr, [&]() -> mt_tokenizer * {
        if (len == 0) {
            mt_error("%s: empty, not a sentencepiece model", name);
            return nullptr;
        }
        if (hf_bpe_is_json(data, len)) return load_json(data, len, name);
        /* owned until returned: the parser may throw (a piece starting with a NUL byte makes
         * its trie builder fail), and spm_guarded's catch must not leak it */
        std::unique_ptr<mt_tokenizer> tok(new mt_tokenizer);
        tok->name = name;
        sentencepiece::util::Status status;
        std::string why;
        try {
            status = tok->sp.LoadFromSerializedProto(std::string_view((const char *)data, len));
            if (!status.ok()) why = spm_status_text(status);
        } catch (const std::exception &e) {
            why = e.what();
            const size_t at = why.find("exception: ");
            if (at != std::string::npos) why = why.substr(at + 11);
            if (why.empty()) why = "the parser raised an exception";
        }
        if (!status.ok() || !why.empty()) {
            mt_error("%s: not a sentencepiece model%s%s%s", name, why.empty() ? "" : " (",
                     why.c_str(), why.empty() ? "" : ")");
            return nullptr;
        }
        if (reserved_ids && check_reserved_ids(tok.get())) return nullptr;
        tok->reserved_ids = reserved_ids;
        return tok.release();
    });
}

extern "C" mt_tokenizer *mt_tokenizer_load_bytes(const void *data, size_t len,
                                                 const char *name_for_errors)
{
    return load_bytes(data, len, name_for_errors, true);
}

static mt_tokenizer *load_file(const char *path, bool reserved_ids)
{
    FILE *f = mt_file_fopen(path, MT_FILE_REGULAR);
    if (!f) return nullptr;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        mt_error("%s: cannot determine the file size: %s", path, strerror(errno));
        fclose(f);
        return nullptr;
    }
    if (size > MAX_MODEL_BYTES) {
        mt_error("%s: %ld bytes is too large for a tokenizer (limit %ld)", path, size,
                 MAX_MODEL_BYTES);
        fclose(f);
        return nullptr;
    }
    char *bytes = (char *)malloc(size > 0 ? (size_t)size : 1);
    if (!bytes) {
        mt_error("%s: out of memory reading %ld bytes", path, size);
        fclose(f);
        return nullptr;
    }
    const size_t got = fread(bytes, 1, (size_t)size, f);
    const bool read_failed = ferror(f) != 0;
    fclose(f);
    mt_tokenizer *tok = nullptr;
    if (read_failed || got != (size_t)size)
        mt_error("%s: read error after %zu of %ld bytes", path, got, size);
    else tok = load_bytes(bytes, got, path, reserved_ids);
    free(bytes);
    return tok;
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The tokenizer a model directory holds: its tokenizer.model, its tokenizer.json, or an opus-mt
 * checkpoint's three files, in that order. */
static mt_tokenizer *load_dir(const char *dir)
{
    static const char *const files[] = {"tokenizer.model", "tokenizer.json"};
    for (const char *file : files) {
        std::string path = std::string(dir) + "/" + file;
        struct stat sb;
        if (lstat(path.c_str(), &sb) == 0) return load_file(path.c_str(), true);
    }
    if (!marian_vocab_in_dir(dir)) {
        mt_error("%s: no tokenizer: a model directory holds tokenizer.model, tokenizer.json, or "
                 "an opus-mt checkpoint's source.spm, target.spm and vocab.json",
                 dir);
        return nullptr;
    }
    marian_vocab *mv = marian_vocab_load(dir);
    if (!mv) return nullptr;
    mt_tokenizer *tok = new mt_tokenizer;
    tok->name = marian_vocab_path(mv);
    tok->marian = mv;
    return tok;
}

extern "C" mt_tokenizer *mt_tokenizer_load(const char *path)
{
    return is_dir(path) ? load_dir(path) : load_file(path, true);
}

extern "C" mt_tokenizer *mt_tokenizer_load_foreign(const char *path)
{
    return load_file(path, false);
}

extern "C" void mt_tokenizer_free(mt_tokenizer *tok)
{
    if (tok) hf_bpe_free(tok->bpe);
    if (tok) marian_vocab_free(tok->marian);
    delete tok;
}

extern "C" int mt_tokenizer_vocab_size(const mt_tokenizer *tok)
{
    if (tok->bpe) return hf_bpe_vocab_size(tok->bpe);
    if (tok->marian) return marian_vocab_size(tok->marian);
    return spm_guarded(tok->name.c_str(), -1, [&] { return tok->sp.GetPieceSize(); });
}

extern "C" const char *mt_tokenizer_id_to_piece(const mt_tokenizer *tok, int id)
{
    if (tok->bpe) return hf_bpe_id_to_piece(tok->bpe, id);
    if (tok->marian) return marian_vocab_id_to_piece(tok->marian, id);
    if (id < 0 || id >= tok->sp.GetPieceSize()) return nullptr;
    return spm_guarded(tok->name.c_str(), (const char *)nullptr,
                       [&] { return tok->sp.IdToPiece(id).c_str(); });
}

extern "C" const char *mt_tokenizer_label(const mt_tokenizer *tok, int id, char *out, size_t len)
{
    if (tok->bpe) {
        size_t n = 0;
        char *bytes = hf_bpe_token_bytes(tok->bpe, id, &n);
        mt_token_label_format(bytes ? bytes : "?", bytes ? n : 1, 0, out, len);
        free(bytes);
        return out;
    }
    const char *piece = mt_tokenizer_id_to_piece(tok, id);
    if (!piece) piece = "?";
    mt_token_label_format(piece, strlen(piece), 1, out, len);
    return out;
}

extern "C" char *mt_tokenizer_word_start_piece(const mt_tokenizer *tok, const char *text)
{
    if (tok->bpe) {
        std::string spaced = std::string(" ") + text;
        return hf_bpe_spell(tok->bpe, spaced.data(), spaced.size());
    }
    /* sentencepiece's pieces (an opus-mt vocabulary's too) mark a word's start with U+2581 */
    return mt_xstrdup((std::string("\u2581") + text).c_str());
}

extern "C" int mt_tokenizer_piece_to_id(const mt_tokenizer *tok, const char *piece)
{
    if (tok->bpe) return hf_bpe_piece_to_id(tok->bpe, piece);
    if (tok->marian) return marian_vocab_piece_to_id(tok->marian, piece);
    if (!piece) return MT_UNK_ID;
    return spm_guarded(tok->name.c_str(), (int)MT_UNK_ID, [&] { return tok->sp.PieceToId(piece); });
}

extern "C" int mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, int **ids, size_t *n)
{
    *ids = nullptr;
    *n = 0;
    const size_t len = strlen(text);
    /* the one line limit of every reader, here too for text that came another way (Lua, the
     * editor): sentencepiece holds ~100 bytes a byte of input, so it is refused unread */
    if (len > MT_LINE_MAX_BYTES)
        return mt_error("a text of %zu bytes is over the %zu-byte limit of one input", len,
                        MT_LINE_MAX_BYTES);
    const size_t bad = mt_utf8_invalid_offset(text, len);
    if (bad < len)
        return mt_error("invalid UTF-8 at byte %zu (0x%02X)", bad,
                        (unsigned)(unsigned char)text[bad]);
    if (tok->bpe) return hf_bpe_encode(tok->bpe, text, len, ids, n);
    if (tok->marian) return marian_vocab_encode(tok->marian, text, len, ids, n);
    return spm_guarded(tok->name.c_str(), -1, [&] {
        std::vector<int> out;
        const auto status = tok->sp.Encode(std::string_view(text, len), &out);
        if (!status.ok())
            return mt_error("%s: encode failed: %s", tok->name.c_str(),
                            spm_status_text(status).c_str());
        *ids = (int *)mt_xmalloc(out.size() * sizeof(int));
        if (!out.empty()) memcpy(*ids, out.data(), out.size() * sizeof(int));
        *n = out.size();
        return 0;
    });
}

extern "C" char *mt_tokenizer_decode(const mt_tokenizer *tok, const int *ids, size_t n)
{
    if (tok->bpe) return hf_bpe_decode(tok->bpe, ids, n, 1);
    if (tok->marian) return marian_vocab_decode(tok->marian, ids, n);
    const char *name = tok->name.c_str();
    return spm_guarded(name, (char *)nullptr, [&]() -> char * {
        const int vocab = tok->sp.GetPieceSize();
        std::vector<int> kept;
        kept.reserve(n);
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= vocab) {
                mt_error("%s: cannot decode id %d (position %zu): the vocabulary has ids 0..%d",
                         name, ids[i], i, vocab - 1);
                return nullptr;
            }
            const bool reserved = ids[i] == MT_PAD_ID || ids[i] == MT_EOS_ID ||
                                  ids[i] == MT_SEP_ID || ids[i] == MT_BOS_ID;
            if (!reserved) kept.push_back(ids[i]);
        }
        std::string text;
        const auto status = tok->sp.Decode(kept, &text);
        if (!status.ok()) {
            mt_error("%s: decode failed: %s", name, spm_status_text(status).c_str());
            return nullptr;
        }
        return mt_xstrdup(text.c_str());
    });
}

extern "C" const char *mt_tokenizer_source(const mt_tokenizer *tok) { return tok->name.c_str(); }

extern "C" int mt_tokenizer_special_id(const mt_tokenizer *tok, mt_token_role role)
{
    if (tok->marian)
        return role == MT_ROLE_EOS   ? marian_vocab_eos(tok->marian)
               : role == MT_ROLE_PAD ? marian_vocab_pad(tok->marian)
                                     : marian_vocab_unk(tok->marian);
    if (tok->bpe || !tok->reserved_ids) return -1;
    return role == MT_ROLE_EOS ? MT_EOS_ID : role == MT_ROLE_PAD ? MT_PAD_ID : MT_UNK_ID;
}

extern "C" int mt_tokenizer_is_special(const mt_tokenizer *tok, int id)
{
    if (!tok->bpe) return -1;
    return id >= 0 && id < hf_bpe_vocab_size(tok->bpe) && hf_bpe_is_special(tok->bpe, id);
}
