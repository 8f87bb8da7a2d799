"""Slips a learner makes in notebook 14 (the transformer block by hand), for
scripts/slip_table.py: per check cell, (what the learner did, the text of the answer, the
text with the slip, a word the report's first line must hold)."""

SLIPS = {
    "pc14-block-check": [
        ("no residual around the attention",
         "self.residual_attention(x + self.attention(", "self.residual_attention(self.attention(",
         "residual around the attention"),
        ("no residual around the MLP", "self.residual_mlp(x + self.mlp(",
         "self.residual_mlp(self.mlp(", "residual around the MLP"),
        ("post-norm around the attention",
         "x = self.residual_attention(x + self.attention(self.attention_norm(x)))  #",
         "x = self.residual_attention(self.attention_norm(x + self.attention(x)))  #",
         "post-norm"),
        ("post-norm, as the original Transformer",
         "x + self.attention(self.attention_norm(x)))  # (B, T, C)\n"
         "        return self.residual_mlp(x + self.mlp(self.mlp_norm(x)))",
         "self.attention_norm(x + self.attention(x)))  # (B, T, C)\n"
         "        return self.residual_mlp(self.mlp_norm(x + self.mlp(x)))", "post-norm"),
        ("the MLP reads attention_norm", "self.mlp(self.mlp_norm(x))",
         "self.mlp(self.attention_norm(x))", "mlp_norm"),
        ("the HookPoint residual_attention left out",
         "x = self.residual_attention(x + self.attention(self.attention_norm(x)))  #",
         "x = x + self.attention(self.attention_norm(x))  #", "residual_attention"),
    ],
    "pc14-decoder-check": [
        ("no position embedding", "x = self.embedding(self.positional_embedding(x))",
         "x = self.embedding(x)", "position"),
        ("no final norm", "self.language_model_head(self.final_norm(x))",
         "self.language_model_head(x)", "final_norm"),
        ("each block's output dropped", "x = block(x)", "block(x)", "x = block(x)"),
        ("each block reads the embedding",
         "for block in self.blocks:\n            x = block(x)",
         "stream = x\n        for block in self.blocks:\n            x = block(stream)",
         "previous block"),
        ("the HookPoint embedding left out", "x = self.embedding(self.positional_embedding(x))",
         "x = self.positional_embedding(x)", "self.embedding"),
    ],
    "ex14-1-check": [
        ("the LayerNorms' biases forgotten", "norms = 2 * 2 * C", "norms = 2 * C", "2 C"),
        ("the MLP's biases forgotten", "mlp = C * hidden + hidden + hidden * C + C",
         "mlp = C * hidden + hidden * C", "MLP's biases"),
    ],
    "ex14-2-check": [
        ("the head's bias forgotten", "head = C * V + V", "head = C * V", "head's bias"),
        ("the position table with V rows", "embeddings = V * C + T * C",
         "embeddings = V * C + V * C", "position table"),
    ],
    "ex14-3-check": [
        ("both residuals kept", "return self.residual_mlp(self.mlp(self.mlp_norm(x)))",
         "return self.residual_mlp(x + self.mlp(self.mlp_norm(x)))", "both"),
        ("the residual around the MLP instead",
         "x = self.residual_attention(x + self.attention(self.attention_norm(x)))\n"
         "        return self.residual_mlp(self.mlp(self.mlp_norm(x)))",
         "x = self.residual_attention(self.attention(self.attention_norm(x)))\n"
         "        return self.residual_mlp(x + self.mlp(self.mlp_norm(x)))", "instead"),
    ],
}
