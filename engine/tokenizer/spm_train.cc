/* Training a joint unigram sentencepiece model with mtlab's reserved ids. The text comes from
 * corpus_reader (validated, seeded sample), not from sentencepiece's own file reader, so bad
 * input is reported with its file and line and the seed decides which lines are used. */
#include "tokenizer/spm_boundary.h"

#include <sentencepiece_trainer.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>

extern "C" {
#include "mtlab/tokenizer.h"
#include "tokenizer/corpus_reader.h"
}

static const int DEFAULT_VOCAB = 8000;
static const size_t DEFAULT_MAX_SENTENCES = 2000000;
static const int SPM_MAX_THREADS = 128; /* sentencepiece's own limit */

/* sentencepiece log levels: 0 INFO (per-iteration progress), 1 WARNING, 2 ERROR. */
enum { SPM_LOG_ALL = 0, SPM_LOG_ERRORS = 2 };

namespace
{

/* Hands corpus_reader's lines to the trainer. A read error ends the iteration; the mt_error
 * message is already recorded and failed() tells the caller to keep it. */
class ReaderIterator : public sentencepiece::SentenceIterator
{
  public:
    explicit ReaderIterator(corpus_reader *r) : reader_(r) { Next(); }
    bool done() const override { return done_; }
    void Next() override
    {
        const char *line;
        size_t len;
        const int got = corpus_reader_next(reader_, &line, &len);
        if (got == 1) {
            value_.assign(line, len);
            return;
        }
        done_ = true;
        failed_ = got < 0;
    }
    const std::string &value() const override { return value_; }
    sentencepiece::util::Status status() const override
    {
        if (!failed_) return sentencepiece::util::Status();
        return sentencepiece::util::Status(sentencepiece::util::StatusCode::kDataLoss,
                                           mt_last_error());
    }
    bool failed() const { return failed_; }

  private:
    corpus_reader *reader_;
    std::string value_;
    bool done_ = false;
    bool failed_ = false;
};

} // namespace

/* Options in sentencepiece's own flag names (spm_train --help). Ids: unk/bos/eos/pad are
 * placed explicitly; the one control symbol, <sep>, then takes the lowest free id, 2. */
static std::unordered_map<std::string, std::string> trainer_flags(const mt_tokenizer_train_opts *o,
                                                                  const std::string &prefix,
                                                                  int vocab, double coverage,
                                                                  int threads)
{
    std::unordered_map<std::string, std::string> flags = {
        {"model_type", "unigram"},
        {"model_prefix", prefix},
        {"vocab_size", std::to_string(vocab)},
        {"character_coverage", std::to_string(coverage)},
        {"num_threads", std::to_string(threads)},
        {"pad_id", std::to_string(MT_PAD_ID)},
        {"eos_id", std::to_string(MT_EOS_ID)},
        {"bos_id", std::to_string(MT_BOS_ID)},
        {"unk_id", std::to_string(MT_UNK_ID)},
        {"pad_piece", "<pad>"},
        {"eos_piece", "<eos>"},
        {"bos_piece", "<bos>"},
        {"unk_piece", "<unk>"},
        {"control_symbols", "<sep>"},
        {"input_sentence_size", "0"}, /* corpus_reader already sampled */
        {"max_sentence_length", std::to_string((int)CORPUS_MAX_LINE_BYTES)},
        {"minloglevel", std::to_string(o->verbose ? SPM_LOG_ALL : SPM_LOG_ERRORS)},
    };
    if (o->user_symbols && *o->user_symbols) flags["user_defined_symbols"] = o->user_symbols;
    return flags;
}

/* sentencepiece only finds out after training that it cannot write the model, and then says
 * so in a confusing way; checking the directory first fails fast and clearly. */
static int check_output_dir(const char *prefix)
{
    const std::string p(prefix);
    const size_t slash = p.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : p.substr(0, slash);
    if (access(dir.c_str(), W_OK) != 0)
        return mt_error("%s.model: cannot write to %s: %s", prefix, dir.c_str(), strerror(errno));
    return 0;
}

static int check_trained_model(const std::string &prefix)
{
    const std::string path = prefix + ".model";
    mt_tokenizer *tok = mt_tokenizer_load(path.c_str());
    if (!tok) return mt_error_context("after training");
    mt_tokenizer_free(tok);
    return 0;
}

/* The model is trained under a temporary prefix beside the target and renamed into place only
 * when whole and loadable: a failed, full-disk or interrupted run leaves the previous model as
 * it was, and a reader never sees half a file. */
static int commit_trained_model(const std::string &tmp, const char *prefix)
{
    for (const char *ext : {".vocab", ".model"}) {
        const std::string from = tmp + ext, to = std::string(prefix) + ext;
        if (rename(from.c_str(), to.c_str()) != 0)
            return mt_error("%s: cannot rename %s into place: %s", to.c_str(), from.c_str(),
                            strerror(errno));
    }
    return 0;
}

extern "C" int mt_tokenizer_train(const mt_tokenizer_train_opts *o)
{
    if (!o->model_prefix || !*o->model_prefix)
        return mt_error("tokenizer training: no model prefix");
    if (!o->inputs || o->n_inputs == 0)
        return mt_error("%s.model: no input files", o->model_prefix);
    const int vocab = o->vocab_size ? o->vocab_size : DEFAULT_VOCAB;
    if (vocab <= MT_UNK_ID + 1)
        return mt_error("%s.model: vocab size %d leaves no room beside the %d reserved ids",
                        o->model_prefix, vocab, MT_UNK_ID + 1);
    const double coverage = o->character_coverage > 0 ? o->character_coverage : 1.0;
    int threads = o->num_threads > 0 ? o->num_threads : (int)std::thread::hardware_concurrency();
    threads = std::clamp(threads, 1, SPM_MAX_THREADS);
    const size_t max_lines = o->max_sentences ? o->max_sentences : DEFAULT_MAX_SENTENCES;
    if (check_output_dir(o->model_prefix)) return -1;

    corpus_reader *reader = corpus_reader_open(o->inputs, o->n_inputs, max_lines, o->seed);
    if (!reader) return -1;
    const std::string tmp = std::string(o->model_prefix) + ".new-" + std::to_string((long)getpid());
    int rc = spm_guarded(o->model_prefix, -1, [&] {
        sentencepiece::SetRandomGeneratorSeed(o->seed);
        ReaderIterator lines(reader);
        const auto status = sentencepiece::SentencePieceTrainer::Train(
            trainer_flags(o, tmp, vocab, coverage, threads), &lines);
        if (lines.failed()) return -1;
        if (!status.ok())
            return mt_error("%s.model: training on %zu lines of %s%s failed: %s", o->model_prefix,
                            corpus_reader_selected_lines(reader), o->inputs[0],
                            o->n_inputs > 1 ? " and the other inputs" : "",
                            spm_status_text(status).c_str());
        return 0;
    });
    corpus_reader_close(reader);
    if (rc == 0) rc = check_trained_model(tmp);
    if (rc == 0) rc = commit_trained_model(tmp, o->model_prefix);
    for (const char *ext : {".vocab", ".model"})
        unlink((tmp + ext).c_str()); /* what is left of it */
    return rc ? -1 : 0;
}
