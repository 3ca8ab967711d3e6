/* SentencePiece as sacreBLEU's spm tokenizers use it (tokenizers/tokenizer_spm.py): any model
 * file, text -> " ".join(EncodeAsPieces(text)). Unlike mt_tokenizer (spm.cc) the model need not
 * have mtlab's reserved ids, and pieces are read from the encoding itself, so a character the
 * model does not know comes out as its own text, not as "<unk>". */
#include "tokenizer/spm_boundary.h"

#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "mtlab/metrics.h"
#include "mtlab/utf8.h"
}

struct mt_spm_pieces {
    sentencepiece::SentencePieceProcessor sp;
    std::string path; /* for messages */
};

extern "C" mt_spm_pieces *mt_spm_pieces_load(const char *path)
{
    return spm_guarded(path, (mt_spm_pieces *)nullptr, [&]() -> mt_spm_pieces * {
        mt_spm_pieces *m = new mt_spm_pieces;
        m->path = path;
        const auto status = m->sp.Load(path);
        if (!status.ok()) {
            mt_error("%s: cannot load a SentencePiece model: %s", path,
                     spm_status_text(status).c_str());
            delete m;
            return nullptr;
        }
        return m;
    });
}

extern "C" void mt_spm_pieces_free(mt_spm_pieces *m) { delete m; }

extern "C" char *mt_spm_pieces_encode(const mt_spm_pieces *m, const char *text)
{
    const size_t len = strlen(text);
    const size_t bad = mt_utf8_invalid_offset(text, len);
    if (bad < len) {
        mt_error("invalid UTF-8 at byte %zu (0x%02X)", bad, (unsigned)(unsigned char)text[bad]);
        return nullptr;
    }
    return spm_guarded(m->path.c_str(), (char *)nullptr, [&]() -> char * {
        std::vector<std::string> pieces;
        const auto status = m->sp.Encode(std::string_view(text, len), &pieces);
        if (!status.ok()) {
            mt_error("%s: encode failed: %s", m->path.c_str(), spm_status_text(status).c_str());
            return nullptr;
        }
        std::string joined;
        for (size_t i = 0; i < pieces.size(); i++) {
            if (i) joined += ' ';
            joined += pieces[i];
        }
        return mt_xstrdup(joined.c_str());
    });
}
