//! Text in, hypotheses out: the one path from a sentence to its translations that `s2s translate`,
//! `s2s serve` and the trainer's validation share. A labelling model (tagging, classification)
//! takes the same path, its labels standing in for the one hypothesis.
//!
//! ```text
//! text -> clean (as the corpus was) -> source tokenizer -> ids
//!      -> search over the model, or an ensemble's models
//!         (s2s_models::decoder::translate_ensemble: batches, cores, kernels)
//!      -> ids -> target tokenizer -> text, tokens, scores, attention labelled with tokens
//! ```
//!
//! A speech model's "text" is the path of a WAV file: read, resampled and turned into
//! normalised features as its data directory's were, then searched the same way; its attention
//! columns are labelled with the time (seconds) each encoder position starts at.

use crate::InferError;
use crate::model_dir::{self, LoadedModel};
use burn::tensor::Device;
use s2s_models::decoder::{ModelSource, TextSource, Vector};
use s2s_models::speech::Frames;
use s2s_search::{Hypothesis, SearchConfig, Source};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One source sentence and its n-best, best first. This is also the JSON of `s2s translate
/// --json` (one object per line) and of `POST /v1/translate` (`{"translations": [...]}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Translation {
    pub src: String,
    /// The source tokens as the model saw them (after cleaning), without `<eos>`.
    pub src_tokens: Vec<String>,
    pub hyps: Vec<Hyp>,
}

/// One hypothesis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hyp {
    pub text: String,
    /// The length-normalised log-probability that the search ranked by.
    pub score: f32,
    /// The raw sum of token log-probabilities, `<eos>` included.
    pub logprob: f32,
    /// Output tokens, without `<eos>`.
    pub tokens: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<Attention>,
}

/// Attention of one hypothesis over its source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attention {
    /// Column labels: the source tokens, followed by `<eos>` when the weights cover it.
    pub src: Vec<String>,
    /// Row labels: the output tokens followed by `<eos>`.
    pub tgt: Vec<String>,
    /// `tgt.len()` rows of `src.len()` weights, averaged over layers and heads (a recurrent
    /// model has one attention). A row sums to 1 over the source and its `<eos>` (so to at most
    /// 1 when `<eos>` is not a column).
    pub mean: Vec<Vec<f32>>,
}

/// A loaded model with its tokenizers, ready to translate; or an ensemble of models that share
/// them ([`Translator::ensemble`]).
pub struct Translator {
    loaded: LoadedModel,
    /// An ensemble's other members: their models only, since they read and write through the
    /// first member's tokenizers ([`s2s_search::Ensemble`]).
    others: Vec<s2s_models::Seq2SeqModel>,
    eos: String,
    /// The vocabulary's target-language tags, sorted (found once: a scan of the vocabulary).
    language_tags: Vec<String>,
    /// Their source ids, sorted: a source of nothing else is blank (see [`Translator::search`]).
    language_tag_ids: Vec<u32>,
}

impl Translator {
    /// Loads the model in `dir` (see [`model_dir::load`]).
    pub fn load(dir: &Path, device: &Device) -> Result<Self, InferError> {
        Ok(Self::new(model_dir::load(dir, device)?))
    }

    pub fn new(loaded: LoadedModel) -> Self {
        let eos = loaded
            .src_tokenizer
            .tokens(&[loaded.src_tokenizer.specials().eos])
            .pop()
            .unwrap_or_default();
        let (mut language_tags, mut language_tag_ids): (Vec<String>, Vec<u32>) = loaded
            .src_tokenizer
            .vocab()
            .into_iter()
            .map(|(t, id)| {
                (
                    t.trim_start_matches(s2s_data::tokenizer::FOREIGN_PREFIX)
                        .to_owned(),
                    id,
                )
            })
            .filter(|(t, _)| s2s_data::sentencepiece::is_language_tag(t))
            .unzip();
        language_tags.sort();
        language_tag_ids.sort_unstable();
        Translator {
            loaded,
            others: Vec::new(),
            eos,
            language_tags,
            language_tag_ids,
        }
    }

    /// An ensemble of the models in `dirs` (one is that model alone): each step decodes the mean
    /// of their probabilities. The first model's tokenizers, decoding defaults and data record
    /// serve all of them, so every member must have been trained on data prepared the same way
    /// (the same task, options and vocabularies), as the error for one that was not says.
    pub fn ensemble(dirs: &[std::path::PathBuf], device: &Device) -> Result<Self, InferError> {
        let Some((first, rest)) = dirs.split_first() else {
            return Err(InferError::Request(
                "an ensemble needs at least one model directory".into(),
            ));
        };
        let mut translator = Self::load(first, device)?;
        for dir in rest {
            let member = model_dir::load(dir, device)?;
            translator.check_member(dir, first, &member)?;
            translator.others.push(member.model);
        }
        Ok(translator)
    }

    /// Whether `member` (loaded from `dir`) reads and writes what the first member (`first`)
    /// does.
    fn check_member(
        &self,
        dir: &Path,
        first: &Path,
        member: &LoadedModel,
    ) -> Result<(), InferError> {
        let l = &self.loaded;
        let differs = if member.data.options != l.data.options
            || member.data.audio != l.data.audio
            || member.data.vectors != l.data.vectors
        {
            Some("its data was prepared with other options (data.toml)")
        } else if member.src_tokenizer.vocab() != l.src_tokenizer.vocab() {
            Some("its source vocabulary differs")
        } else if member.tgt_tokenizer.vocab() != l.tgt_tokenizer.vocab() {
            Some("its target vocabulary differs")
        } else if member.model.as_labeller().is_some() != l.model.as_labeller().is_some() {
            Some("one labels its input and the other decodes a sequence")
        } else if member.model.copy_gate().is_some() != l.model.copy_gate().is_some() {
            Some("one copies from its source and the other does not")
        } else if member.model.as_labeller().map(|m| m.reads_characters())
            != l.model.as_labeller().map(|m| m.reads_characters())
        {
            Some("one reads each word's spelling and the other does not")
        } else {
            None
        };
        match differs {
            None => Ok(()),
            Some(why) => Err(InferError::Config(format!(
                "{} cannot join an ensemble with {}: {why}; fix: ensemble models trained on one \
                 prepared DATA_DIR (s2s prepare)",
                dir.display(),
                first.display()
            ))),
        }
    }

    /// Every model that decodes: the first, then an ensemble's others.
    fn models(&self) -> Vec<&s2s_models::Seq2SeqModel> {
        std::iter::once(&self.loaded.model)
            .chain(&self.others)
            .collect()
    }

    /// How many models decode together (1 unless [`Translator::ensemble`]).
    pub fn members(&self) -> usize {
        1 + self.others.len()
    }

    /// The model, its config and tokenizers (an ensemble's first member's).
    pub fn loaded(&self) -> &LoadedModel {
        &self.loaded
    }

    /// The model's preset name, or "custom" for a model configured from scratch; an ensemble's
    /// names the first member's and the number of members.
    pub fn arch_name(&self) -> String {
        let name = self
            .loaded
            .run
            .arch
            .clone()
            .unwrap_or_else(|| "custom".into());
        match self.members() {
            1 => name,
            n => format!("ensemble of {n} ({name}, ...)"),
        }
    }

    /// Trainable parameters (tied or shared weights counted once), of every member together.
    pub fn parameters(&self) -> usize {
        self.models()
            .into_iter()
            .map(burn::module::Module::num_params)
            .sum()
    }

    /// Runs `f` (which translates with this translator, on this thread) with the model's weights
    /// kept packed for the matrix kernels from one call to the next, as a long-running server
    /// wants; without it each [`Translator::search`] packs them again. The packed copy stays
    /// resident until `f` returns.
    pub fn keep_packed_weights<R>(&self, f: impl FnOnce() -> R) -> R {
        s2s_models::engine::packed::with_packed_weights(f)
    }

    /// The special ids of the model's vocabulary, which searches over it need.
    pub fn specials(&self) -> s2s_data::Specials {
        self.loaded.tgt_tokenizer.specials()
    }

    /// The search defaults of [`crate::defaults::search`] for this model's vocabulary, with the
    /// model's own length penalty ([`crate::Decoding`]).
    pub fn search_defaults(&self, strategy: s2s_search::Strategy) -> SearchConfig {
        SearchConfig {
            length_penalty: s2s_search::LengthPenalty::Alpha(self.loaded.decoding.alpha),
            ..crate::defaults::search(strategy, self.specials())
        }
    }

    /// Beam search as this model decodes by default: its own beam and alpha
    /// ([`crate::Decoding`]), everything else [`crate::defaults::search`]'s.
    pub fn beam_defaults(&self) -> SearchConfig {
        self.search_defaults(s2s_search::Strategy::Beam {
            k: self.loaded.decoding.beam,
        })
    }

    /// The model's decoding defaults (`decoding.toml`, or the built-in ones, or what
    /// [`Translator::set_decoding`] put in their place).
    pub fn decoding(&self) -> &crate::Decoding {
        &self.loaded.decoding
    }

    /// Decode with `decoding` as the defaults instead of the first model's `decoding.toml`: an
    /// ensemble's own, tuned for it (`s2s tune --out FILE`, then `--decoding FILE`).
    pub fn set_decoding(&mut self, decoding: crate::Decoding) {
        self.loaded.decoding = decoding;
    }

    /// The target-language tags the vocabulary has (`>>cmn_Hans<<`: multilingual Marian models).
    pub fn language_tags(&self) -> Vec<String> {
        self.language_tags.clone()
    }

    /// `texts` with the tag of target language `lang` (`cmn_Hans`, or the tag itself) in front,
    /// as multilingual Marian models expect; an error names the tags the model has.
    pub fn with_target_lang(
        &self,
        texts: &[String],
        lang: &str,
    ) -> Result<Vec<String>, InferError> {
        let tag = if s2s_data::sentencepiece::is_language_tag(lang) {
            lang.to_owned()
        } else {
            format!(">>{lang}<<")
        };
        let tags = &self.language_tags;
        if !tags.contains(&tag) {
            let known = if tags.is_empty() {
                "this model has none: it translates into one language, so drop the option".into()
            } else {
                format!("it has {}", tags.join(" "))
            };
            return Err(InferError::Request(format!(
                "the model has no target-language tag {tag}; {known}"
            )));
        }
        Ok(texts.iter().map(|t| format!("{tag} {t}")).collect())
    }

    /// Cleans and encodes a source sentence the way the training corpus was. The text is
    /// ordinary text: `<eos>`, `<pad>` and the like in it never become control tokens (see
    /// [`s2s_data::TextTokenizer`]). Empty or whitespace-only text gives no ids (or only the
    /// target-language tag put in front of it), a blank source that [`Translator::search`]
    /// translates to the empty hypothesis. A source longer than the corpus's `max_src_tokens`
    /// keeps its first that many tokens, as in training.
    /// A copy model's unknown source pieces get ids past the vocabulary ([`s2s_data::copy`]).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.encode_source(text).0
    }

    /// [`Translator::encode`], and the pieces a copy model's ids past the vocabulary stand for
    /// ([`s2s_data::DataOptions::encode_source`]).
    fn encode_source(&self, text: &str) -> (Vec<u32>, s2s_data::SourceWords) {
        let l = &self.loaded;
        l.data
            .options
            .encode_source(&l.src_tokenizer, &self.clean_source(text), self.copies())
    }

    /// `text` cleaned as the training sources were.
    fn clean_source(&self, text: &str) -> String {
        let options = &self.loaded.data.options;
        s2s_data::clean_line(text, &options.clean, options.src_is_chinese)
    }

    /// Whether the model copies from the source ([`s2s_models::copy`]).
    pub fn copies(&self) -> bool {
        self.loaded.model.copy_gate().is_some()
    }

    /// The pieces behind the ids past the vocabulary that [`Translator::encode`] gives `text`
    /// (none unless the model copies).
    pub fn source_words(&self, text: &str) -> s2s_data::SourceWords {
        if !self.copies() {
            return Vec::new();
        }
        self.encode_source(text).1
    }

    /// Every text as the model reads it: [`Translator::encode`]'s ids, with each token's
    /// spelling where the model reads characters ([`Translator::reads_characters`]).
    pub fn encode_all(&self, texts: &[String]) -> Vec<TextSource> {
        texts.iter().map(|t| self.text_source(t).0).collect()
    }

    /// One text as the model reads it (see [`Translator::encode_all`]), and the pieces a copy
    /// model's ids past the vocabulary stand for ([`Translator::source_words`]), from one
    /// encoding.
    fn text_source(&self, text: &str) -> (TextSource, s2s_data::SourceWords) {
        if !self.reads_characters() {
            let (ids, words) = self.encode_source(text);
            return (ids.into(), words);
        }
        let l = &self.loaded;
        let (ids, spellings) = l
            .data
            .options
            .encode_source_spelled(&l.src_tokenizer, &self.clean_source(text));
        let source = TextSource {
            ids,
            spellings: Some(spellings.into()),
        };
        (source, Vec::new())
    }

    /// Whether the model reads each source token's spelling as well as its id (a labeller with
    /// `[model.chars]`).
    pub fn reads_characters(&self) -> bool {
        self.loaded
            .model
            .as_labeller()
            .is_some_and(|m| m.reads_characters())
    }

    /// The ids of a known output (a reference) as the target side was prepared: cleaned as the
    /// corpus was, then the target tokenizer; with a copy model, its unknown pieces that its
    /// source's `words` ([`Translator::source_words`]) hold take their ids past the vocabulary.
    pub fn encode_target(&self, text: &str, words: &[String]) -> Vec<u32> {
        let l = &self.loaded;
        let options = &l.data.options;
        let clean = s2s_data::clean_line(text, &options.clean, options.tgt_is_chinese);
        if words.is_empty() {
            l.tgt_tokenizer.encode(&clean)
        } else {
            l.tgt_tokenizer.encode_target_copy(&clean, words)
        }
    }

    /// The teacher-forced log-probability of each reference given its source (a speech model's:
    /// a WAV path; see [`s2s_models::scoring`]), under an ensemble the log of its members' mean
    /// probability token by token, `batch_size` pairs at a time: perplexity is
    /// `exp(-sum(logprob) / sum(tokens))`. A labeller's references are its labels: as many tags as
    /// source tokens for a tagger, one label for a classifier; an error names the first pair
    /// (1-based) that has another shape.
    pub fn score(
        &self,
        sources: &[String],
        refs: &[String],
        batch_size: usize,
    ) -> Result<Vec<s2s_models::scoring::RefScore>, InferError> {
        if sources.len() != refs.len() {
            return Err(InferError::Request(format!(
                "{} sources but {} references; fix: give one reference per source",
                sources.len(),
                refs.len()
            )));
        }
        let l = &self.loaded;
        let models = self.models();
        if let Some(vectors) = self.vector_sources(sources)? {
            let targets: Vec<Vec<u32>> = refs.iter().map(|r| self.encode_target(r, &[])).collect();
            return Ok(s2s_models::scoring::score_ensemble(
                &models,
                &l.device,
                &vectors,
                &targets,
                self.specials(),
                batch_size,
            ));
        }
        if self.reads_audio() {
            let frames = self.audio_frames(sources)?;
            let targets: Vec<Vec<u32>> = refs.iter().map(|r| self.encode_target(r, &[])).collect();
            self.check_label_shapes(&frames, &targets)?;
            return Ok(s2s_models::scoring::score_ensemble(
                &models,
                &l.device,
                &frames,
                &targets,
                self.specials(),
                batch_size,
            ));
        }
        let (encoded, targets): (Vec<TextSource>, Vec<Vec<u32>>) = sources
            .iter()
            .zip(refs)
            .map(|(s, r)| {
                let (source, words) = self.text_source(s);
                (source, self.encode_target(r, &words))
            })
            .unzip();
        self.check_label_shapes(&encoded, &targets)?;
        Ok(s2s_models::scoring::score_ensemble(
            &models,
            &l.device,
            &encoded,
            &targets,
            self.specials(),
            batch_size,
        ))
    }

    /// A labeller's references must have its shape: a tag per source token, or one label.
    fn check_label_shapes<S: ModelSource>(
        &self,
        sources: &[S],
        targets: &[Vec<u32>],
    ) -> Result<(), InferError> {
        let Some(labeller) = self.loaded.model.as_labeller() else {
            return Ok(());
        };
        let per_token = labeller.cfg.head.per_token();
        for (i, (src, labels)) in sources.iter().zip(targets).enumerate() {
            let (want, what) = if per_token {
                (src.token_ids().len(), "one tag per source token")
            } else {
                (1, "one label")
            };
            if labels.len() != want {
                return Err(InferError::Request(format!(
                    "pair {}: the reference has {} label(s) but the model gives {what} \
                     ({want} here); fix: give references in the model's shape",
                    i + 1,
                    labels.len()
                )));
            }
        }
        Ok(())
    }

    /// Target ids back to text; `words` are the source's ([`Translator::source_words`]), which
    /// a copy model's ids past the vocabulary stand for.
    pub fn decode(&self, tokens: &[u32], words: &[String]) -> String {
        self.loaded.tgt_tokenizer.decode_copied(tokens, words)
    }

    /// Whether `src` is blank: no ids, or only target-language tags (the encoding of an empty
    /// or whitespace-only line). A blank source is not searched: its translation is
    /// [`empty_hypothesis`].
    pub fn is_blank(&self, src: &[u32]) -> bool {
        src.iter()
            .all(|id| self.language_tag_ids.binary_search(id).is_ok())
    }

    /// Searches every encoded source, `batch_size` sentences at a time; returns each sentence's
    /// n-best, best first. A blank source (see [`Translator::is_blank`]) is not given to the
    /// model: its n-best is the one [`empty_hypothesis`].
    pub fn search(
        &self,
        sources: &[TextSource],
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Vec<Hypothesis>>, InferError> {
        let l = &self.loaded;
        if let Some(labeller) = l.model.as_labeller() {
            if labeller.reads_characters() && sources.iter().any(|s| s.spellings.is_none()) {
                return Err(InferError::Request(
                    "this model reads each token's spelling, which ids alone do not give; fix: \
                     encode texts with Translator::encode_all"
                        .into(),
                ));
            }
            return Ok(self.label(labeller, sources, batch_size));
        }
        // A generation model's source is its condition, not a text whose length the output
        // follows: only the absolute `max_len` bounds it.
        let unbounded;
        let cfg = if l.run.task() == s2s_data::Task::Generation && cfg.max_len_ratio.is_some() {
            unbounded = SearchConfig {
                max_len_ratio: None,
                ..cfg.clone()
            };
            &unbounded
        } else {
            cfg
        };
        self.search_skipping_blanks(sources, |s| self.is_blank(&s.ids), cfg, batch_size)
    }

    /// Searches the sources that are not `blank`; a blank one's n-best is the one
    /// [`empty_hypothesis`] (nothing to translate: an empty line, or audio with no frame).
    fn search_skipping_blanks<S: ModelSource>(
        &self,
        sources: &[S],
        blank: impl Fn(&S) -> bool,
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Vec<Hypothesis>>, InferError> {
        let l = &self.loaded;
        // The same checks as a search, so that a bad configuration fails whatever the input.
        cfg.validate(l.run.tgt_vocab)?;
        skipping_blanks(sources, blank, |searched| {
            Ok(s2s_models::decoder::translate_ensemble(
                &self.models(),
                &l.device,
                l.run.tgt_vocab,
                searched,
                cfg,
                batch_size,
            )?)
        })
    }

    /// A labeller's "search": its labels in one pass, as the one hypothesis of each source, the
    /// labels as its tokens (so that its text is the tags, or the label). Its score is the mean
    /// log-probability of its labels and its log-probability their sum; there is no attention.
    fn label<S: ModelSource>(
        &self,
        labeller: &s2s_models::labeller::Labeller,
        sources: &[S],
        batch_size: usize,
    ) -> Vec<Vec<Hypothesis>> {
        let l = &self.loaded;
        // An ensemble's members are all labellers (Translator::check_member).
        let members: Vec<&s2s_models::labeller::Labeller> = std::iter::once(labeller)
            .chain(self.others.iter().filter_map(|m| m.as_labeller()))
            .collect();
        s2s_models::labeller::label_ensemble(
            &members,
            &l.device,
            sources,
            self.specials(),
            batch_size,
        )
        .into_iter()
        .map(|labels| {
            let token_logprobs: Vec<f32> = labels.iter().map(|&(_, p)| p.ln()).collect();
            let logprob: f32 = token_logprobs.iter().sum();
            vec![Hypothesis {
                tokens: labels.iter().map(|&(id, _)| id).collect(),
                score: logprob / token_logprobs.len().max(1) as f32,
                logprob,
                token_logprobs,
                attention: None,
            }]
        })
        .collect()
    }

    /// Whether the model transcribes audio: its inputs are paths of WAV files.
    pub fn reads_audio(&self) -> bool {
        self.loaded.data.audio.is_some()
    }

    /// The dimension of a vector-conditioned model's inputs: each is a line of that many numbers
    /// ([`s2s_data::vectors`]).
    pub fn vector_dim(&self) -> Option<usize> {
        self.loaded.data.vectors.map(|v| v.dim)
    }

    /// A vector-conditioned model's inputs, each line parsed as a vector of its dimension; an
    /// error names the first bad line (1-based). `None` for any other model.
    pub fn vector_sources(&self, lines: &[String]) -> Result<Option<Vec<Vector>>, InferError> {
        let Some(dim) = self.vector_dim() else {
            return Ok(None);
        };
        lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                s2s_data::vectors::parse_dim(line, Some(dim))
                    .map(|v| Vector(v.into()))
                    .map_err(|problem| InferError::Request(format!("input {}: {problem}", i + 1)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// A vector-conditioned model's [`Translator::translate`]: searches from each of `vectors`
    /// (parsed from `texts` by [`Translator::vector_sources`]), `batch_size` at a time, and
    /// describes each text's hypotheses with one attention column, the vector.
    pub fn generate_from_vectors(
        &self,
        texts: &[String],
        vectors: &[Vector],
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Translation>, InferError> {
        let results = self.search_skipping_blanks(vectors, |_| false, cfg, batch_size)?;
        Ok(texts
            .iter()
            .zip(&results)
            .map(|(text, hyps)| self.describe_tokens(text, vec!["<vector>".into()], &[], hyps))
            .collect())
    }

    /// The model's view of the audio file at each path: its features, normalised as in
    /// training.
    pub fn audio_frames(&self, paths: &[String]) -> Result<Vec<Frames>, InferError> {
        let features = self.feature_extractor()?;
        paths
            .iter()
            .map(|path| {
                let wav = s2s_data::audio::read_wav(Path::new(path))
                    .map_err(|e| InferError::Request(e.to_string()))?;
                features.frames(&wav)
            })
            .collect()
    }

    /// A WAV file's bytes (an upload), decoded; `name` labels it in errors. Its length is
    /// `seconds()`, known before the features are computed ([`Translator::frames_of`]).
    pub fn decode_wav(
        &self,
        bytes: &[u8],
        name: &str,
    ) -> Result<s2s_data::audio::Audio, InferError> {
        s2s_data::audio::decode_wav(bytes, name).map_err(|e| InferError::Request(e.to_string()))
    }

    /// Decoded audio as the model sees it: resampled to its rate, log-mel features normalised as
    /// in training.
    pub fn frames_of(&self, wav: &s2s_data::audio::Audio) -> Result<Frames, InferError> {
        self.feature_extractor()?.frames(wav)
    }

    /// The model's feature extractor, built once for a batch of files.
    fn feature_extractor(&self) -> Result<FeatureExtractor<'_>, InferError> {
        let audio =
            self.loaded.data.audio.as_ref().ok_or_else(|| {
                InferError::Request("this model reads text, not audio".to_owned())
            })?;
        let fbank = s2s_data::audio::Fbank::new(&audio.fbank)
            .map_err(|e| InferError::Config(e.to_string()))?;
        Ok(FeatureExtractor { audio, fbank })
    }

    /// Transcribes the WAV files at `paths` (a speech model's [`Translator::translate`]).
    fn transcribe(
        &self,
        paths: &[String],
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Translation>, InferError> {
        let frames = self.audio_frames(paths)?;
        let results = self.search_frames(&frames, cfg, batch_size)?;
        Ok(paths
            .iter()
            .zip(&frames)
            .zip(&results)
            .map(|((path, f), hyps)| self.describe_frames(path, f, hyps))
            .collect())
    }

    /// Searches a speech model over audio features, `batch_size` utterances at a time; returns
    /// each one's n-best, best first. Audio too short for one encoder position is not searched:
    /// its n-best is the one [`empty_hypothesis`], as for an empty line of text.
    pub fn search_frames(
        &self,
        frames: &[Frames],
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Vec<Hypothesis>>, InferError> {
        let blank = |f: &Frames| Source::len(f) == 0;
        match self.loaded.model.as_labeller() {
            // A classifier of audio: nothing to label in audio too short for one position.
            Some(labeller) => skipping_blanks(frames, blank, |heard| {
                Ok(self.label(labeller, heard, batch_size))
            }),
            None => self.search_skipping_blanks(frames, blank, cfg, batch_size),
        }
    }

    /// One utterance's hypotheses (see [`Translator::describe`]): its attention columns are
    /// labelled with the time each encoder position starts at.
    pub fn describe_frames(&self, name: &str, frames: &Frames, hyps: &[Hypothesis]) -> Translation {
        let hop = self
            .loaded
            .data
            .audio
            .as_ref()
            .map_or(0.0, |a| a.fbank.hop_ms)
            / 1000.0;
        // Encoder position j covers frames from 4j on (s2s_models::speech).
        let times: Vec<String> = (0..Source::len(frames))
            .map(|j| format!("{:.2}s", (4 * j) as f32 * hop))
            .collect();
        self.describe_tokens(name, times, &[], hyps)
    }

    /// Translates every text: [`Translator::encode`], [`Translator::search`], then
    /// [`Translator::describe`]. A speech model's texts are WAV paths.
    pub fn translate(
        &self,
        texts: &[String],
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Translation>, InferError> {
        if self.reads_audio() {
            return self.transcribe(texts, cfg, batch_size);
        }
        if let Some(vectors) = self.vector_sources(texts)? {
            return self.generate_from_vectors(texts, &vectors, cfg, batch_size);
        }
        let sources = self.encode_all(texts);
        let results = self.search(&sources, cfg, batch_size)?;
        Ok(texts
            .iter()
            .zip(&sources)
            .zip(&results)
            .map(|((text, src), hyps)| self.describe(text, &src.ids, hyps))
            .collect())
    }

    /// The best hypothesis of each text, as text (empty when the search found none).
    pub fn translate_best(
        &self,
        texts: &[String],
        cfg: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<String>, InferError> {
        if self.reads_audio() {
            let out = self.transcribe(texts, cfg, batch_size)?;
            return Ok(out
                .into_iter()
                .map(|t| {
                    t.hyps
                        .into_iter()
                        .next()
                        .map(|h| h.text)
                        .unwrap_or_default()
                })
                .collect());
        }
        let (sources, words): (Vec<TextSource>, Vec<s2s_data::SourceWords>) =
            texts.iter().map(|t| self.text_source(t)).unzip();
        Ok(self
            .search(&sources, cfg, batch_size)?
            .iter()
            .zip(&words)
            .map(|(h, words)| {
                h.first()
                    .map(|h| self.decode(&h.tokens, words))
                    .unwrap_or_default()
            })
            .collect())
    }

    /// One source sentence's hypotheses with their text, tokens and labelled attention.
    pub fn describe(&self, text: &str, src: &[u32], hyps: &[Hypothesis]) -> Translation {
        let words = self.source_words(text);
        let src_tokens = self.loaded.src_tokenizer.tokens_copied(src, &words);
        self.describe_tokens(text, src_tokens, &words, hyps)
    }

    /// [`Translator::describe`] of a source whose tokens (attention columns) are given.
    fn describe_tokens(
        &self,
        text: &str,
        src_tokens: Vec<String>,
        words: &[String],
        hyps: &[Hypothesis],
    ) -> Translation {
        let tgt_tokenizer = &self.loaded.tgt_tokenizer;
        let hyps = hyps
            .iter()
            .map(|h| {
                let tokens = tgt_tokenizer.tokens_copied(&h.tokens, words);
                let attention = h.attention.as_ref().map(|rows| Attention {
                    src: attention_columns(&src_tokens, &self.eos, rows),
                    tgt: tokens.iter().cloned().chain([self.eos.clone()]).collect(),
                    mean: rows.clone(),
                });
                Hyp {
                    text: tgt_tokenizer.decode_copied(&h.tokens, words),
                    score: h.score,
                    logprob: h.logprob,
                    tokens,
                    attention,
                }
            })
            .collect();
        Translation {
            src: text.to_owned(),
            src_tokens,
            hyps,
        }
    }
}

/// A speech model's features: its filterbank and the training split's normalisation.
struct FeatureExtractor<'a> {
    audio: &'a s2s_data::datadir::AudioOptions,
    fbank: s2s_data::audio::Fbank,
}

impl FeatureExtractor<'_> {
    fn frames(&self, wav: &s2s_data::audio::Audio) -> Result<Frames, InferError> {
        let wav = s2s_data::audio::resample(wav, self.audio.fbank.sample_rate)
            .map_err(|e| InferError::Request(e.to_string()))?;
        let mut f = self.fbank.features(&wav.samples);
        self.audio.cmvn.apply(&mut f);
        Ok(Frames(std::sync::Arc::new(f)))
    }
}

/// `run` over the sources that are not `blank`, in order; a blank one's n-best is the one
/// [`empty_hypothesis`].
fn skipping_blanks<S: Clone>(
    sources: &[S],
    blank: impl Fn(&S) -> bool,
    run: impl FnOnce(&[S]) -> Result<Vec<Vec<Hypothesis>>, InferError>,
) -> Result<Vec<Vec<Hypothesis>>, InferError> {
    let (blank, kept): (Vec<usize>, Vec<usize>) =
        (0..sources.len()).partition(|&i| blank(&sources[i]));
    if blank.is_empty() {
        return run(sources);
    }
    let searched: Vec<S> = kept.iter().map(|&i| sources[i].clone()).collect();
    let found = if searched.is_empty() {
        Vec::new()
    } else {
        run(&searched)?
    };
    let mut out = vec![Vec::new(); sources.len()];
    for (i, hyps) in kept.into_iter().zip(found) {
        out[i] = hyps;
    }
    for i in blank {
        out[i] = vec![empty_hypothesis()];
    }
    Ok(out)
}

/// The translation of a blank source (an empty or whitespace-only line): no tokens, score and
/// log-probability 0 (the empty output is certain), the `<eos>` step's log-probability 0, and no
/// attention (nothing was decoded, so none is returned even when asked for).
pub fn empty_hypothesis() -> Hypothesis {
    Hypothesis {
        tokens: Vec::new(),
        score: 0.0,
        logprob: 0.0,
        token_logprobs: vec![0.0],
        attention: None,
    }
}

/// The column labels of an attention matrix: the source tokens, then `<eos>` if the rows cover
/// it (a model attends over the source and its trailing `<eos>`; a search may trim rows to the
/// source tokens alone).
pub fn attention_columns(src_tokens: &[String], eos: &str, rows: &[Vec<f32>]) -> Vec<String> {
    let width = rows.first().map_or(src_tokens.len() + 1, Vec::len);
    src_tokens
        .iter()
        .cloned()
        .chain([eos.to_owned()])
        .take(width)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_columns_follow_the_rows_width() {
        let src = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            attention_columns(&src, "<eos>", &[vec![0.5, 0.25, 0.25]]),
            ["a", "b", "<eos>"]
        );
        assert_eq!(
            attention_columns(&src, "<eos>", &[vec![0.5, 0.5]]),
            ["a", "b"]
        );
        assert_eq!(attention_columns(&src, "<eos>", &[]), ["a", "b", "<eos>"]);
    }
}
