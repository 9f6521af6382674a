"""Reports: figures, HTML and Markdown pages from analysis results."""
