"""What the report shows and no row decides: the depth profile, held-out CE over training, ρ_t
per chunk, the drift sums, the two-token toy and the movement table, the top-k tracking, and the
unscaled transcription of Proposition 1 on a run's pairs."""
