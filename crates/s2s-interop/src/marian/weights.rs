//! Weight names and layouts between Hugging Face's MarianMT and s2s's Transformer: one table of
//! links read in both directions, plus the embedding, the logits bias and the output projection.
//!
//! A linear layer's weight is `[out, in]` in PyTorch and `[in, out]` in burn, so every linked
//! linear weight is transposed; everything else keeps its layout.

use std::collections::BTreeMap;

use s2s_models::transformer::TransformerConfig;
use safetensors::{Dtype, SafeTensors};

use crate::{Result, unsupported};

/// A dense f32 tensor on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl HostTensor {
    /// The transpose of a matrix.
    pub fn transposed(&self) -> HostTensor {
        let [r, c] = self.shape[..] else {
            panic!("transposed: not a matrix: {:?}", self.shape)
        };
        let mut data = vec![0f32; r * c];
        for i in 0..r {
            for j in 0..c {
                data[j * r + i] = self.data[i * c + j];
            }
        }
        HostTensor {
            shape: vec![c, r],
            data,
        }
    }

    /// Rows `rows` of a matrix (or entries of a vector), in that order.
    pub fn rows(&self, rows: &[usize]) -> HostTensor {
        let width: usize = self.shape[1..].iter().product();
        let mut data = Vec::with_capacity(rows.len() * width);
        for &r in rows {
            data.extend_from_slice(&self.data[r * width..(r + 1) * width]);
        }
        let mut shape = self.shape.clone();
        shape[0] = rows.len();
        HostTensor { shape, data }
    }

    /// Whether row `row` of a matrix is all zeros.
    pub fn row_is_zero(&self, row: usize) -> bool {
        let width: usize = self.shape[1..].iter().product();
        self.data[row * width..(row + 1) * width]
            .iter()
            .all(|&x| x == 0.0)
    }

    /// Sets row `row` of a matrix to zeros.
    pub fn zero_row(&mut self, row: usize) {
        let width: usize = self.shape[1..].iter().product();
        self.data[row * width..(row + 1) * width].fill(0.0);
    }

    fn reshaped(mut self, shape: Vec<usize>) -> HostTensor {
        assert_eq!(shape.iter().product::<usize>(), self.data.len());
        self.shape = shape;
        self
    }
}

/// Every tensor of a safetensors file, as f32 (f16 and bf16 are widened). `what` names the file.
pub fn read_safetensors(bytes: &[u8], what: &str) -> Result<BTreeMap<String, HostTensor>> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| {
        unsupported(format!(
            "{what}: not a safetensors file ({e}); restore it or download it again"
        ))
    })?;
    let mut out = BTreeMap::new();
    for (name, view) in st.tensors() {
        let raw = view.data();
        let data: Vec<f32> = match view.dtype() {
            Dtype::F32 => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => raw
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => raw
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(unsupported(format!(
                    "{what}: tensor `{name}` has dtype {other:?}; only F32, F16 and BF16 are read"
                )));
            }
        };
        out.insert(
            name,
            HostTensor {
                shape: view.shape().to_vec(),
                data,
            },
        );
    }
    Ok(out)
}

/// A safetensors file of f32 tensors, with `metadata`.
pub fn write_safetensors(
    tensors: &BTreeMap<String, HostTensor>,
    metadata: Option<std::collections::HashMap<String, String>>,
) -> Result<Vec<u8>> {
    let bytes: Vec<(String, Vec<u8>, Vec<usize>)> = tensors
        .iter()
        .map(|(k, t)| {
            let b: Vec<u8> = t.data.iter().flat_map(|x| x.to_le_bytes()).collect();
            (k.clone(), b, t.shape.clone())
        })
        .collect();
    let views = bytes
        .iter()
        .map(|(k, b, shape)| {
            safetensors::tensor::TensorView::new(Dtype::F32, shape.clone(), b)
                .map(|v| (k.clone(), v))
                .map_err(|e| unsupported(format!("cannot write tensor `{k}`: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize(views, metadata)
        .map_err(|e| unsupported(format!("cannot serialise the weights: {e}")))
}

/// One linked tensor: its name on each side and whether it is a linear weight (transposed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub hf: String,
    pub s2s: String,
    pub transpose: bool,
}

/// Marian's joint embedding table (`[vocab, d]`).
pub const HF_EMBEDDING: &str = "model.shared.weight";
/// Older checkpoints' copies of the joint table.
pub const HF_EMBEDDING_COPIES: [&str; 2] = [
    "model.encoder.embed_tokens.weight",
    "model.decoder.embed_tokens.weight",
];
/// Marian's fixed position tables, present in older checkpoints.
pub const HF_POSITIONS: [&str; 2] = [
    "model.encoder.embed_positions.weight",
    "model.decoder.embed_positions.weight",
];
pub const HF_LOGITS_BIAS: &str = "final_logits_bias";
pub const HF_LM_HEAD: &str = "lm_head.weight";
pub const S2S_EMBEDDING: &str = "Transformer.tgt_emb.weight";
pub const S2S_LOGITS_BIAS: &str = "Transformer.logits_bias";
pub const S2S_OUTPUT: &str = "Transformer.output.weight";

/// The per-layer links of a Transformer with `cfg`'s layer counts.
pub fn layer_links(cfg: &TransformerConfig) -> Vec<Link> {
    let mut links = Vec::new();
    // A linear layer: its weight (transposed) and bias.
    let mut linear = |hf: String, s2s: String| {
        for (p, transpose) in [("weight", true), ("bias", false)] {
            links.push(Link {
                hf: format!("{hf}.{p}"),
                s2s: format!("{s2s}.{p}"),
                transpose,
            });
        }
    };
    let decoder_attention = [("self_attn", "self_attn"), ("encoder_attn", "cross_attn")];
    let decoder_norms = [
        ("self_attn_layer_norm", "self_attn_sub"),
        ("encoder_attn_layer_norm", "cross_attn_sub"),
        ("final_layer_norm", "ffn_sub"),
    ];
    let stacks = [
        (
            "encoder",
            cfg.enc_layers,
            &decoder_attention[..1],
            vec![decoder_norms[0], decoder_norms[2]],
        ),
        (
            "decoder",
            cfg.dec_layers,
            &decoder_attention[..],
            decoder_norms.to_vec(),
        ),
    ];
    let mut norms = Vec::new();
    for (stack, layers, attentions, layer_norms) in stacks {
        for i in 0..layers {
            let hf = format!("model.{stack}.layers.{i}");
            let s2s = format!("Transformer.{stack}.layers.{i}");
            for (h, s) in attentions {
                for (hp, sp) in [
                    ("q_proj", "query"),
                    ("k_proj", "key"),
                    ("v_proj", "value"),
                    ("out_proj", "output"),
                ] {
                    linear(format!("{hf}.{h}.{hp}"), format!("{s2s}.{s}.{sp}"));
                }
            }
            for (h, s) in [("fc1", "inner"), ("fc2", "outer")] {
                linear(format!("{hf}.{h}"), format!("{s2s}.ffn.{s}"));
            }
            for (h, s) in &layer_norms {
                for (hp, sp) in [("weight", "gamma"), ("bias", "beta")] {
                    norms.push(Link {
                        hf: format!("{hf}.{h}.{hp}"),
                        s2s: format!("{s2s}.{s}.norm.{sp}"),
                        transpose: false,
                    });
                }
            }
        }
    }
    links.extend(norms);
    links
}

fn take(map: &mut BTreeMap<String, HostTensor>, name: &str, what: &str) -> Result<HostTensor> {
    map.remove(name).ok_or_else(|| {
        unsupported(format!(
            "{what}: tensor `{name}` is missing; the checkpoint does not match its config.json"
        ))
    })
}

/// The s2s tensors of a Marian checkpoint (`what` names it in errors). `positions` are the
/// sinusoids s2s computes (`[rows, d]`, Marian's layout), to check the tables older checkpoints
/// store against.
pub fn to_s2s(
    mut hf: BTreeMap<String, HostTensor>,
    cfg: &TransformerConfig,
    positions: impl Fn(usize) -> HostTensor,
    what: &str,
) -> Result<BTreeMap<String, HostTensor>> {
    let mut out = BTreeMap::new();
    for link in layer_links(cfg) {
        let t = take(&mut hf, &link.hf, what)?;
        out.insert(link.s2s, if link.transpose { t.transposed() } else { t });
    }
    let embedding = match hf.remove(HF_EMBEDDING) {
        Some(t) => t,
        None => HF_EMBEDDING_COPIES
            .iter()
            .find_map(|n| hf.get(*n).cloned())
            .ok_or_else(|| {
                unsupported(format!(
                    "{what}: no embedding table ({HF_EMBEDDING}) in the checkpoint"
                ))
            })?,
    };
    for copy in HF_EMBEDDING_COPIES {
        if let Some(t) = hf.remove(copy)
            && t != embedding
        {
            return Err(unsupported(format!(
                "{what}: `{copy}` differs from the joint table: separate embeddings are not supported"
            )));
        }
    }
    for name in HF_POSITIONS {
        if let Some(t) = hf.remove(name) {
            let want = positions(t.shape[0]);
            let worst = t
                .data
                .iter()
                .zip(&want.data)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            if t.shape != want.shape || worst > 1e-4 {
                return Err(unsupported(format!(
                    "{what}: `{name}` is not Marian's fixed sinusoid table (largest difference \
                     {worst}): learned positions are not supported"
                )));
            }
        }
    }
    let vocab = embedding.shape[0];
    let bias = match hf.remove(HF_LOGITS_BIAS) {
        Some(b) => b.reshaped(vec![vocab]),
        None => HostTensor {
            shape: vec![vocab],
            data: vec![0.0; vocab],
        },
    };
    out.insert(S2S_LOGITS_BIAS.to_owned(), bias);
    if !cfg.tie_output {
        out.insert(
            S2S_OUTPUT.to_owned(),
            take(&mut hf, HF_LM_HEAD, what)?.transposed(),
        );
    } else if let Some(head) = hf.remove(HF_LM_HEAD)
        && head != embedding
    {
        return Err(unsupported(format!(
            "{what}: `{HF_LM_HEAD}` differs from the embeddings although tie_word_embeddings is true"
        )));
    }
    out.insert(S2S_EMBEDDING.to_owned(), embedding);
    if let Some(name) = hf.keys().next() {
        return Err(unsupported(format!(
            "{what}: tensor `{name}` has no place in s2s's Transformer ({} unknown in all); s2s cannot import this model",
            hf.len()
        )));
    }
    Ok(out)
}

/// The Marian tensors of an s2s Transformer's, keeping vocabulary entries `keep` in that order
/// (new id `i` is old id `keep[i]`).
pub fn to_hf(
    mut s2s: BTreeMap<String, HostTensor>,
    cfg: &TransformerConfig,
    keep: &[usize],
) -> Result<BTreeMap<String, HostTensor>> {
    let what = "the model's weights";
    let mut out = BTreeMap::new();
    for link in layer_links(cfg) {
        let t = take(&mut s2s, &link.s2s, what)?;
        out.insert(link.hf, if link.transpose { t.transposed() } else { t });
    }
    let embedding = take(&mut s2s, S2S_EMBEDDING, what)?;
    let vocab = embedding.shape[0];
    let bias = s2s.remove(S2S_LOGITS_BIAS).unwrap_or(HostTensor {
        shape: vec![vocab],
        data: vec![0.0; vocab],
    });
    out.insert(
        HF_LOGITS_BIAS.to_owned(),
        bias.rows(keep).reshaped(vec![1, keep.len()]),
    );
    if !cfg.tie_output {
        out.insert(
            HF_LM_HEAD.to_owned(),
            take(&mut s2s, S2S_OUTPUT, what)?.transposed().rows(keep),
        );
    }
    out.insert(HF_EMBEDDING.to_owned(), embedding.rows(keep));
    Ok(out)
}
