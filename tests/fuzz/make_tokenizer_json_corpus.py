"""Writes the seed corpus of tests/fuzz/tokenizer_json_fuzz.cpp: small valid
tokenizer.json files made with the `tokenizers` package (BPE byte-level and
with byte fallback, WordPiece, WordLevel; normalizer, pre-tokenizer and decoder
sequences, templates, added tokens). Run from the repository root."""
import json
import os

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

OUT = os.path.join(os.path.dirname(__file__), "corpus", "tokenizer_json")
TEXT = ["Hello, world! The quick brown fox.", "café naïve 中文 😀 12345", "x = [1, 2]; # code\n\tdef f(): pass"] * 4


def save(name, t):
    spec = json.loads(t.to_str())
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(spec, f, separators=(",", ":"), ensure_ascii=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    t.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=120, special_tokens=["<s>", "</s>", "<|im_start|>"]))
    save("bpe_byte_level", t)

    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    t.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    t.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=100, special_tokens=["<unk>"] +
                                                    [f"<0x{b:02X}>" for b in range(256)]))
    save("bpe_byte_fallback", t)

    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True),
                                               pre_tokenizers.Punctuation()])
    t.decoder = decoders.WordPiece()
    t.post_processor = processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1))
    t.train_from_iterator(TEXT, trainers.WordPieceTrainer(vocab_size=80, special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    save("wordpiece_bert", t)

    t = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    t.normalizer = normalizers.NFKC()
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                               pre_tokenizers.Split(r"\d", behavior="isolated"),
                                               pre_tokenizers.Metaspace()])
    t.train_from_iterator(TEXT, trainers.WordLevelTrainer(vocab_size=50, special_tokens=["[UNK]"]))
    save("wordlevel_metaspace", t)


if __name__ == "__main__":
    main()
