# A fine-tuning program in run_glue.py's shape (transformers/examples):
# a CSV of sentences and labels, tokenized once with datasets.map, padded
# to max_seq_length (run_glue's default, --pad_to_max_length True) or
# dynamically by DataCollatorWithPadding (--pad_to_max_length False), a
# BERT from a small config, HfArgumentParser and Trainer.
import os, random, sys
from dataclasses import dataclass, field

import datasets
from transformers import (BertConfig, BertForSequenceClassification, DataCollatorWithPadding, HfArgumentParser,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments, default_data_collator, set_seed)


@dataclass
class DataArgs:
    max_seq_length: int = field(default=128)
    pad_to_max_length: bool = field(default=True)
    train_samples: int = field(default=2048)


def corpus(n, seed):
    rng = random.Random(seed)
    words = ["w%d" % i for i in range(2000)]
    rows = []
    for _ in range(n):
        k = min(120, max(3, int(rng.lognormvariate(2.6, 0.6))))  # SST-2-like: ~13 words typical, a long tail
        rows.append({"sentence": " ".join(rng.choice(words) for _ in range(k)), "label": rng.randint(0, 1)})
    return rows


def tokenizer_for(rows):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator((r["sentence"] for r in rows), trainers.WordPieceTrainer(vocab_size=3000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")


def main():
    data_args, training_args = HfArgumentParser((DataArgs, TrainingArguments)).parse_args_into_dataclasses()
    set_seed(training_args.seed)
    rows = corpus(data_args.train_samples, 0)
    tokenizer = tokenizer_for(rows)
    raw = datasets.Dataset.from_list(rows)
    padding = "max_length" if data_args.pad_to_max_length else False
    train = raw.map(lambda b: tokenizer(b["sentence"], padding=padding, max_length=data_args.max_seq_length, truncation=True),
                    batched=True, remove_columns=["sentence"])
    collator = default_data_collator if data_args.pad_to_max_length else DataCollatorWithPadding(tokenizer)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=512, num_labels=2, pad_token_id=tokenizer.pad_token_id)
    model = BertForSequenceClassification(config)
    trainer = Trainer(model=model, args=training_args, train_dataset=train, data_collator=collator)
    result = trainer.train()
    print("train_runtime %.2f s, %.1f samples/s" % (result.metrics["train_runtime"], result.metrics["train_samples_per_second"]))


if __name__ == "__main__":
    main()
