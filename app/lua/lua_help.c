/* The reference of the `mtlab` module: one entry per function, the source of mtlab.help(),
 * the console's `? name` and README's "Lua API" section (`mtlab run --reference`). A test
 * checks that every function the module holds has an entry and every entry a function. */
#include "lua/lua_internal.h"
#include "lua/mtlab_lua.h"

#include <string.h>

const mtl_help_entry mtl_help[] = {
    {"mtlab.load",
     "mtlab.load(path [, {device=\"cpu\"|\"cuda:N\", precision=\"fp32\"|\"int8\"|\"bf16\"}]) -> "
     "model",
     "Opens a model bundle directory (or \"apertium:MODE\", Apertium's rule-based translator) "
     "on a device, its linear layers in fp32, int8 (CPU only) or bf16 (CUDA only)."},
    {"mtlab.average",
     "mtlab.average({bundles}, out [, {dtype=\"f32\"|\"f16\"|\"bf16\", force=false}]) -> out",
     "Checkpoint averaging: writes the bundle out with the element-wise mean of the weights of "
     "bundles of one model (the first's dtype by default); refuses other architectures, shapes "
     "or tokenizers. A bundle already at out is replaced only with force = true (whole, in one "
     "rename)."},
    {"mtlab.architectures", "mtlab.architectures() -> {names}",
     "The architectures mtlab builds, in the paper's order (the engine's registry); each is a "
     "preset of the paper's sizes, and NAME-small one of the demo's."},
    {"mtlab.help", "mtlab.help([name]) -> string",
     "The signature and one sentence about a function of this module; without a name, the "
     "list of all of them."},
    {"model:translate",
     "model:translate(text | {texts} [, {beam=5, max_len=, batch=16, on_token=fn, "
     "progress=true}]) -> result | {results}",
     "Translates; a result is {text, tokens, time_s, state_bytes, model_state_bytes, score, "
     "logprob, finished, ids, search} (search: \"greedy\" or \"beam 5\"; state_bytes the "
     "decoding's largest working set, model_state_bytes the model's own state at the end: KV "
     "cache or recurrent state, one sentence's); on_token(piece, i, text) sees each new "
     "token, and an error it raises cancels the decode. Without beam= the workbench's console "
     "decodes with the panes' search (F4), elsewhere beam 5 as `mtlab translate`."},
    {"model:probe", "model:probe(src, hyp [, {kind=, layer=, head=, encoder=}]) -> matrix",
     "One map of what the model computed for src -> hyp: kind state_norms, state_groups, "
     "attention, cross or implicit; layer 1-based (first such layer by default); head (mean "
     "of heads by default)."},
    {"model:attribute",
     "model:attribute(src, hyp [, {method=, steps=, rule=, contrast=, baseline=}]) -> matrix",
     "Gradient attribution of each target token of hyp (nil: the greedy translation; rows, "
     "then <eos>) onto the inputs (columns: source side, then target side): method saliency, "
     "input_x_gradient or integrated_gradients (steps, default 64; rule adaptive or "
     "gauss-legendre; baseline pad or zero); "
     "contrast, a token, attributes log p(target) - log p(contrast)."},
    {"model:close", "model:close()",
     "Frees the model now (also done by the garbage collector and by a <close> variable)."},
    {"model.name",
     "model.name, model.arch, model.params, model.device, model.precision, model.path, "
     "model.config",
     "The bundle's name, architecture, parameter count, device, precision (\"fp32\", "
     "\"int8\" or \"bf16\"), path and config.json as a table."},
    {"matrix:get", "matrix:get(i, j) -> number (also matrix[i][j])",
     "One value of a probe map, 1-based."},
    {"matrix:shape", "matrix:shape() -> rows, cols", "The size of the matrix (#matrix is rows)."},
    {"matrix:max", "matrix:max() -> value, row, col",
     "The largest value and where it is (matrix:min() the smallest)."},
    {"matrix:min", "matrix:min() -> value, row, col", "The smallest value and where it is."},
    {"matrix:totable", "matrix:totable() -> {{...}, ...}",
     "A copy of the values as nested "
     "Lua tables."},
    {"matrix:row_labels", "matrix:row_labels() -> {strings}",
     "The tokens (or layers, channel groups) the rows stand for."},
    {"matrix:col_labels", "matrix:col_labels() -> {strings}", "The tokens the columns stand for."},
    {"mtlab.score.bleu",
     "mtlab.score.bleu(hyps, refs [, {lowercase=, smooth=\"exp\", tokenize=\"13a\", spm=}]) -> "
     "score",
     "Corpus BLEU exactly as sacreBLEU 2.6.0 (and `mtlab score`) computes it: {score, "
     "signature, line, verbose, precisions, bp, ratio, sys_len, ref_len}; tokenize is "
     "sacreBLEU's (13a, none, intl, char, zh, flores101/flores200 with spm = MODEL FILE, "
     "ja-mecab)."},
    {"mtlab.score.chrf", "mtlab.score.chrf(hyps, refs [, {lowercase=, word_order=0}]) -> score",
     "Corpus chrF2 (word_order=2: chrF2++) exactly as sacreBLEU computes it: {name, score, "
     "signature, line}."},
    {"mtlab.score.ter",
     "mtlab.score.ter(hyps, refs [, {normalized=, no_punct=, asian_support=, case_sensitive=}]) -> "
     "score",
     "Corpus TER exactly as sacreBLEU computes it (its --ter-* options; lowercased unless "
     "case_sensitive): {name, score, signature, line}."},
    {"mtlab.score.comet", "mtlab.score.comet(srcs, hyps, refs, {model=DIR [, device=]}) -> score",
     "COMET (wmt22-comet-da's estimator, computed by mtlab) of one reference stream, as `mtlab "
     "score -m comet` gives it: {name, score (the mean), segments (each segment's score), "
     "signature, line}."},
    {"mtlab.corpus.lines", "mtlab.corpus.lines(path) -> iterator",
     "The lines of a UTF-8 text file, trailing whitespace removed."},
    {"mtlab.corpus.pairs", "mtlab.corpus.pairs(src_path, ref_path) -> iterator of src, ref",
     "The aligned lines of two parallel files (an error when their line counts differ)."},
    {"mtlab.corpus.read", "mtlab.corpus.read(src_path, ref_path) -> {{src=, ref=}, ...}",
     "Two parallel files as a list of pairs."},
    {"mtlab.corpus.cat", "mtlab.corpus.cat(pairs, n) -> pairs",
     "Joins each run of n consecutive pairs into one (both sides with a space): paragraphs "
     "from verses."},
    {"mtlab.entities.recall",
     "mtlab.entities.recall(srcs, hyps, refs [, {stats=PATH, lang=}]) -> bins",
     "Named-entity recall as in the paper: {unseen, regular, frequent, all}, each {recall, "
     "macro_recall, micro_recall, entities, occurrences, hits}, binned by the training counts "
     "in corpus_stats.tsv. recall is the paper's macro average, the mean of each distinct "
     "entity's recall (macro_recall); micro_recall is hits / occurrences."},
    {"mtlab.eval",
     "mtlab.eval{models={...}, src=, ref=, beam=5, device=, precision=, stats=, train_src=, "
     "train_ref=, lexicon=, ner=, length_model=, hyps=DIR, src_name=, ref_name=, names=TSV, "
     "paired=\"bs\"|\"ar\"|\"none\", comet=DIR} -> result",
     "What `mtlab eval` computes, as data: result.systems[i] = {name, bleu, chrf, chrfpp, "
     "significance, ne, ne_translated, names, buckets, time_s, peak_bytes, hyps, ...}; with two "
     "systems or more, significance = {bleu=, chrf=, chrfpp=} each {p, significant, mean, ci} "
     "(and comet= with a COMET model directory: systems[i].comet, the mean segment score) "
     "against systems[1] (paired bootstrap unless paired= says otherwise; result.paired_test "
     "names it); result.text is the report it "
     "prints; src and ref are files or lists of lines; precision=\"fp32,int8\" evaluates each "
     "bundle both ways (systems named \"DIR · int8\"); names (test.names.tsv) adds each system's "
     "recall of substituted names, {recall, names, hits}."},
    {"mtlab.plot.line",
     "mtlab.plot.line{series={{name=, x={...}, y={...}}, ...} | x=, y=, title=, xlabel=, "
     "ylabel=} -> plot",
     "A line plot of one or more series (nil in y is a gap)."},
    {"mtlab.plot.bar",
     "mtlab.plot.bar{labels={...}, series={{name=, values={...}}, ...} | values=, title=, "
     "ylabel=} -> plot",
     "A bar plot, grouped when there are several series."},
    {"mtlab.plot.heatmap",
     "mtlab.plot.heatmap(matrix | {{...}, ...} [, {title=, xlabel=, ylabel=, row_labels=, "
     "col_labels=, range={lo, hi}, scale=\"viridis\"|\"greys\", causal=}]) -> plot",
     "A heatmap of a probe's matrix (its tokens as labels) or of nested lists; causal=true "
     "leaves the cells above the diagonal undefined."},
    {"plot:show", "plot:show([{width=, height=, color=, ascii=}])",
     "Draws the plot on stdout in braille and block characters (colours on a terminal unless "
     "NO_COLOR is set)."},
    {"plot:save", "plot:save(path [, {width=800, height=500}]) -> path",
     "Writes the plot as .svg, .png (cairo) or .csv, chosen by the file name."},
    {"plot:text", "plot:text([{width=, height=, color=, ascii=}]) -> string",
     "The drawing plot:show would print, as a string."},
    {"plot:close", "plot:close()", "Frees the plot now (also done by the garbage collector)."},
    {"mtlab.jobs.start",
     "mtlab.jobs.start(config [, {launcher=\"local\"|\"slurm\", name=, overrides={key=value}, "
     "procs=, tasks=, nodes=, gpus_per_node=}]) -> job",
     "Checks the training config with its overrides (\"model.d_model\" for a model key), then "
     "trains it in the background as runs/NAME/; an error means nothing was started. On several "
     "ranks as `jobs start` (docs/distributed.md): procs=N under mpirun (local), tasks=N or "
     "nodes=N with gpus_per_node=G under srun (slurm)."},
    {"mtlab.jobs.list", "mtlab.jobs.list() -> {jobs}", "Every job under runs/, by name."},
    {"mtlab.jobs.stop", "mtlab.jobs.stop(job | name) -> job",
     "Asks a job to stop: it saves a checkpoint and ends as cancelled (job:wait() waits for "
     "that)."},
    {"mtlab.jobs.resume",
     "mtlab.jobs.resume(job | name [, {max_steps=, procs=, tasks=, nodes=, gpus_per_node=}]) -> "
     "job",
     "Relaunches a job that is not running, from its checkpoint, through the same launcher; "
     "max_steps= extends a run past its end, the ranks options run it on another number of "
     "ranks (the same losses: docs/distributed.md §2)."},
    {"mtlab.jobs.wait", "mtlab.jobs.wait(job | name [, timeout_s]) -> job, finished",
     "Waits until the job is neither pending nor running (finished true), or timeout_s passed "
     "(false)."},
    {"mtlab.jobs.log", "mtlab.jobs.log(job | name) -> {records}",
     "The run's log.jsonl: {event=\"train\", step, epoch, loss, lr, tokens_per_s, elapsed_s} and "
     "{event=\"valid\", step, valid_loss, valid_bleu, elapsed_s} records."},
    {"job:stop", "job:stop() -> job", "mtlab.jobs.stop(job)."},
    {"job:resume", "job:resume([opts]) -> job", "mtlab.jobs.resume(job, opts)."},
    {"job:wait", "job:wait([timeout_s]) -> job, finished", "mtlab.jobs.wait(job, timeout_s)."},
    {"job:log", "job:log() -> {records}", "mtlab.jobs.log(job)."},
    {"job.name",
     "job.name, job.dir, job.launcher, job.max_steps, job.state, job.ranks, job.step, job.loss, "
     "job.tokens_per_s, job.valid_bleu, job.pid, job.slurm_id, job.error, job.started_at, "
     "job.ended_at",
     "A job's run and, read afresh from its state file and log at each access, its state "
     "(pending, running, completed, cancelled or failed; broken when its job.json cannot be "
     "read, the reason in job.error: listed as broken beside the others) and latest figures."},
};
const size_t mtl_help_count = sizeof mtl_help / sizeof mtl_help[0];

/* mtlab.help([name]) */
int mtl_help_fn(lua_State *L)
{
    const char *name = luaL_optstring(L, 1, NULL);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 0; i < mtl_help_count; i++) {
        const mtl_help_entry *e = &mtl_help[i];
        if (name) {
            /* "load", "mtlab.load", "score.bleu" and "translate" all find their entry */
            size_t nl = strlen(name), el = strlen(e->name);
            int match = !strcmp(e->name, name) ||
                        (el > nl && !strcmp(e->name + el - nl, name) &&
                         (e->name[el - nl - 1] == '.' || e->name[el - nl - 1] == ':'));
            if (!match) continue;
            luaL_addstring(&b, e->signature);
            luaL_addstring(&b, "\n  ");
            luaL_addstring(&b, e->summary);
            luaL_pushresult(&b);
            return 1;
        }
        luaL_addstring(&b, e->signature);
        luaL_addchar(&b, '\n');
    }
    if (name)
        return luaL_error(L, "mtlab.help: no function named '%s' (mtlab.help() lists them)", name);
    luaL_pushresult(&b);
    return 1;
}

void mtl_reference(FILE *out)
{
    /* an empty line between entries: each function its own short paragraph in README */
    for (size_t i = 0; i < mtl_help_count; i++)
        fprintf(out, "%s- `%s`  \n  %s\n", i ? "\n" : "", mtl_help[i].signature,
                mtl_help[i].summary);
}
