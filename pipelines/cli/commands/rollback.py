"""`rollback`: serve an older version again, as a new and highest version."""

from tpu_embeddings.push_root import consumer


def register(sub):
  p = sub.add_parser(
      'rollback', help='re-publish an older pushed version as the newest')
  consumer.add_root_arguments(p)
  p.add_argument('--to', required=True, metavar='V',
                 help='the pushed version to serve again')
  p.add_argument('--keep-versions', type=int, default=0,
                 help='then keep only the newest N versions (0 = all)')
  p.set_defaults(func=run)


def run(args) -> int:
  root = consumer.root_from_args(args)
  result = consumer.rollback(root, args.to, keep_versions=args.keep_versions)
  print(f'version {result.manifests["serving"]["rollback_of"]} re-published '
        f'as version {result.version} (now served) under {root}')
  return 0
