"""The embeddable chat widget: widgets a site embeds, their visitors' answers (issue 22)."""
