/* English words that are capitalised by position or style but are not names, for the English
 * recogniser (entities.c). ASCII lower case, sorted for bsearch.
 *
 * sentence_words: ordinary words found capitalised at the start of a sentence or quotation,
 *   made by tests/fixtures/entities/make_english_words.py from the Bible training split:
 *   every word opening a sentence there whose lower-case form also occurs in lower case at
 *   least 3 times, plus the English function words. Names that double as common nouns (Lot,
 *   Job, Mark, Baal, Ram) are left out, so "Lot went out" still yields Lot.
 * styled_words: words capitalised anywhere that a tagger does not call names (languages and
 *   peoples, which OntoNotes-style taggers label NORP, and "Amen").
 * title_words: titles that stay apart from the name they precede. */
#include "eval/entities_words.h"

#include <stdlib.h>
#include <string.h>

static const char *const sentence_words[] = {
    "abhor", "about", "above", "abroad", "abstain", "abundance", "abundant", "accept",
    "according", "across", "add", "admonish", "adulterous", "after", "afterward", "afterwards",
    "again", "against", "agree", "all", "allow", "almost", "along", "alongside", "already",
    "also", "altar", "although", "always", "am", "amazement", "amend", "among", "an", "and",
    "anguish", "anoint", "another", "answer", "any", "anybody", "anyone", "anything",
    "anywhere", "apart", "appoint", "are", "aren", "arise", "arm", "around", "as", "ascribe",
    "ask", "assemble", "assign", "assuredly", "at", "authority", "avenge", "awake", "away",
    "backsliding", "bake", "baldness", "be", "bear", "beat", "beautiful", "because", "becoming",
    "been", "before", "begin", "beginning", "behind", "behold", "being", "believe", "beloved",
    "below", "beneath", "beside", "besides", "better", "between", "beware", "beyond", "bind",
    "binding", "birds", "bless", "blessed", "blessing", "blessings", "blind", "bloodthirsty",
    "blow", "blue", "boil", "boiling", "both", "bow", "branches", "bread", "break", "breaking",
    "bring", "brother", "brothers", "build", "burst", "bury", "but", "buy", "by", "calamity",
    "call", "calling", "can", "cannot", "carry", "cast", "casting", "catch", "cause", "cease",
    "certain", "certainly", "changes", "charge", "cheer", "cherubim", "child", "children",
    "choose", "circumcise", "circumcision", "clean", "cleanse", "cling", "clothe", "clouds",
    "clubs", "coals", "come", "comfort", "coming", "command", "commit", "compassion",
    "concerning", "conduct", "confidence", "confuse", "confusion", "conscience", "consecrate",
    "consider", "consult", "consume", "contend", "continue", "correct", "could", "couldn",
    "counsel", "count", "cover", "create", "cross", "crucify", "cry", "curse", "cursed", "cut",
    "cutting", "dare", "darkness", "daughter", "daughters", "day", "days", "deal", "death",
    "deceit", "declare", "deep", "defend", "defile", "delicate", "deliver", "demons", "depart",
    "desiring", "desolation", "desolations", "destroy", "destroyers", "destruction",
    "destructive", "devour", "devout", "did", "didn", "die", "differing", "dig", "direct",
    "disaster", "discipline", "discretion", "dismay", "disperse", "display", "disputes",
    "distress", "divide", "do", "does", "doesn", "doing", "dominion", "don", "done", "down",
    "draw", "dress", "drink", "drive", "drought", "during", "dust", "dwell", "each", "early",
    "earth", "eastward", "eat", "eighteen", "either", "else", "encamp", "encourage", "enjoy",
    "enlarge", "enough", "enter", "entering", "entice", "entreat", "escape", "establish",
    "even", "evening", "ever", "everlasting", "every", "everybody", "everyone", "everything",
    "everywhere", "evil", "exalt", "exalted", "examine", "excellent", "except", "execute",
    "exercise", "extol", "facing", "faithless", "fall", "fallen", "far", "father", "favor",
    "fear", "fearfulness", "fearing", "feed", "few", "fields", "fifty", "fight", "figs", "fill",
    "find", "fire", "first", "five", "flee", "flight", "follow", "following", "folly", "food",
    "foods", "foolish", "fools", "for", "forces", "foreigners", "forget", "forgive", "forsake",
    "forty", "four", "free", "freely", "friend", "friends", "from", "fulfill", "full",
    "further", "future", "gather", "gathering", "generation", "get", "girl", "give", "gladness",
    "glorify", "glorious", "glory", "go", "going", "gold", "good", "governors", "grace",
    "grain", "grant", "grass", "gray", "graze", "great", "greater", "greatly", "greet",
    "greetings", "guard", "guards", "guide", "had", "hail", "half", "happy", "has", "hasn",
    "hate", "hatred", "have", "haven", "having", "he", "heal", "heap", "hear", "hearing",
    "heaven", "help", "her", "here", "hers", "herself", "hide", "him", "himself", "his", "hold",
    "holiness", "holy", "honest", "honey", "honor", "hope", "horror", "house", "houses", "how",
    "however", "humble", "hungry", "hurry", "husbands", "hypocrites", "if", "immediately", "in",
    "incense", "incline", "increase", "indeed", "indignation", "inhabitant", "inside",
    "instead", "instruct", "into", "iron", "is", "isn", "it", "its", "itself", "jealousy",
    "joy", "judge", "judgment", "just", "justice", "keep", "kill", "kind", "king", "kings",
    "kneeling", "know", "knowing", "knowledge", "lament", "last", "lay", "laying", "lead",
    "leaping", "learn", "least", "leave", "leaving", "length", "less", "lest", "let", "levy",
    "lie", "life", "lift", "lifting", "light", "lightnings", "like", "likewise", "lilies",
    "listen", "little", "live", "load", "locusts", "lodge", "long", "longing", "look",
    "looking", "love", "loving", "lying", "maintain", "majesty", "make", "malice", "man",
    "manna", "many", "march", "master", "may", "me", "meditation", "men", "merciful", "mercy",
    "might", "mine", "mischief", "mockers", "more", "moreover", "morning", "most", "mourn",
    "move", "much", "multiply", "multitudes", "must", "my", "myself", "naked", "nation",
    "nations", "neither", "nettles", "never", "nevertheless", "new", "news", "next", "nine",
    "no", "nobody", "none", "nor", "not", "nothing", "notice", "now", "number", "obey",
    "observe", "of", "off", "offer", "often", "oh", "old", "on", "once", "one", "only", "onto",
    "open", "opening", "opposite", "or", "ostriches", "other", "others", "otherwise", "ought",
    "our", "ours", "ourselves", "out", "outside", "over", "owe", "own", "pains", "pairs",
    "palm", "pangs", "part", "pass", "passing", "pay", "peace", "peaceably", "people",
    "perform", "perfume", "perhaps", "pestilence", "physician", "plans", "plant", "play",
    "plead", "pleasant", "please", "pluck", "posterity", "pour", "poverty", "power", "praise",
    "pray", "precious", "prepare", "present", "preserve", "press", "previously", "pride",
    "princes", "proclaim", "produce", "prophesy", "prostitution", "provide", "publish", "pull",
    "punish", "purge", "purify", "pursue", "put", "putting", "quickly", "quite", "rage", "rain",
    "raise", "ransom", "rather", "reach", "read", "really", "rebuke", "receive", "receiving",
    "record", "redeem", "refrain", "refresh", "refuge", "regard", "reign", "rejoice", "release",
    "relent", "relieve", "remain", "remember", "remind", "remove", "render", "renew",
    "renounce", "repay", "repent", "reproach", "reprove", "rescue", "respect", "rest",
    "restore", "return", "revive", "riches", "rid", "righteous", "righteousness", "rise",
    "robbers", "roll", "rule", "run", "running", "sacrifice", "sacrifices", "saddle", "salt",
    "salvation", "same", "sanctify", "satisfy", "save", "say", "scatter", "scoffer", "seal",
    "search", "see", "seeing", "seek", "seize", "sell", "send", "sent", "separate", "servants",
    "serve", "set", "setting", "settle", "seven", "seventy", "several", "shake", "shall",
    "shame", "sharp", "she", "shed", "shepherds", "shoot", "should", "shouldn", "shout", "show",
    "sickness", "sigh", "silence", "silent", "silver", "sin", "since", "sing", "sinners",
    "sins", "sit", "six", "sixty", "skin", "sleep", "sling", "smoke", "so", "soldiers", "some",
    "somebody", "someone", "something", "sometimes", "son", "sons", "soon", "sorrow", "sought",
    "soul", "sound", "southward", "sow", "spare", "speak", "spring", "stand", "standing",
    "stay", "still", "stolen", "stop", "strangers", "strap", "streams", "strength",
    "strengthen", "stretch", "strike", "strip", "strive", "strong", "such", "sudden",
    "suddenly", "sulfur", "sun", "surely", "swear", "sword", "swords", "take", "taking", "talk",
    "tax", "teach", "teacher", "tear", "tell", "ten", "terror", "terrors", "test", "than",
    "thanksgiving", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "therefore", "these", "they", "thick", "things", "thinking", "thirty", "this", "thorns",
    "those", "though", "thousands", "threats", "three", "through", "throughout", "throw",
    "thrust", "thunders", "thus", "till", "to", "today", "together", "tomorrow", "tongues",
    "too", "touch", "toward", "towards", "trample", "treason", "treasures", "tremble",
    "trembling", "trouble", "true", "truly", "trust", "truth", "try", "turn", "turning",
    "twelve", "twenty", "two", "unbelieving", "unclean", "under", "underneath", "understand",
    "understanding", "unleavened", "unless", "unrighteous", "unrighteousness", "until", "up",
    "uphold", "upon", "upright", "us", "utter", "utterly", "valiant", "vengeance", "very",
    "vile", "violence", "violent", "viper", "visit", "vows", "wail", "wailing", "wait", "wake",
    "walk", "walking", "wallow", "wander", "was", "wash", "wasn", "watch", "watchman", "water",
    "waters", "wave", "we", "wealth", "weep", "weeping", "well", "were", "weren", "what",
    "whatever", "when", "whenever", "where", "whereas", "whereupon", "wherever", "whether",
    "which", "while", "who", "whoever", "whole", "whom", "whomever", "whose", "why", "wicked",
    "wickedness", "will", "windows", "wine", "wisdom", "wise", "with", "withdraw", "within",
    "without", "witness", "wives", "woe", "woman", "women", "won", "wonder", "working",
    "wormwood", "worship", "worthless", "worthy", "would", "wouldn", "wrath", "write", "year",
    "yes", "yesterday", "yet", "you", "young", "your", "yours", "yourself", "yourselves",
    "zeal",
};

static const char *const styled_words[] = {
    "amen", "gentiles", "greek", "greeks", "hebrew", "hebrews", "jew", "jewish", "jews",
    "pharisees", "philistines", "sadducees",
};

static const char *const title_words[] = {"lord"};

static int compare_word(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(const char *const *)elem);
}

static int listed(const char *lower, const char *const *list, size_t n)
{
    return bsearch(lower, list, n, sizeof *list, compare_word) != NULL;
}

/* Plural peoples ("Levites", "Egyptians", "Chaldeans") name groups, not entities. */
static int is_people_plural(const char *lower)
{
    static const char *const endings[] = {"ites", "ians", "eans"};
    size_t len = strlen(lower);
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++) {
        size_t k = strlen(endings[i]);
        if (len > k + 1 && !strcmp(lower + len - k, endings[i])) return 1;
    }
    return 0;
}

int english_title_word(const char *lower)
{
    return listed(lower, title_words, sizeof title_words / sizeof title_words[0]);
}

int english_common_word(const char *lower, int sentence_start)
{
    if (listed(lower, styled_words, sizeof styled_words / sizeof styled_words[0])) return 1;
    if (is_people_plural(lower)) return 1;
    return sentence_start &&
           listed(lower, sentence_words, sizeof sentence_words / sizeof sentence_words[0]);
}
