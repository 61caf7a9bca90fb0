"""The export library: a trained Model as every registered export kind.

`export.export_model` is the one path for every model: restore, write each
kind of `tpu_embeddings.artifacts.export_kinds` (the serving SavedModel, the
TF1 Hub module), load-check each in a fresh process, then move each into its
output. What differs between models is what the model's module declares:

* a module with the optional `exported_table(spec) -> (table, vocabulary)`
  (the built-in skip-gram declares it) is served as that one table of text
  embeddings (`table_source`): restored alone and written streamed, so a
  multi-GB table is held once; its serving SavedModel tokenizes sentences
  and answers `serving_default`, `lookup` and `neighbors`
  (`table_serving`), its Hub module the text-embedding signatures
  (`table_hub`);
* any other module is served through its own `signatures` and HUB call
  (`module_source`, `module_hub`).

TensorFlow, TensorFlow Hub and tensorflow-serving-api are all it needs; no
TFX (components/exporter is the TFX executor over it).
"""
