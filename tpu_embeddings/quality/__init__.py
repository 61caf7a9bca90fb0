"""Quality of embedding tables: health, neighbours, retrieval and word metrics.

Every pass over a table walks it in blocks of bounded bytes (`table_scan`),
so tables of millions of rows are measured within about their own memory.
Imports no TensorFlow but `eval_files` (which reads with `tf.io.gfile`).
"""
