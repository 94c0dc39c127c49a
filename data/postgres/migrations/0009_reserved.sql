-- Reserved for another branch's migration (0009); replaced by it at merge.
SELECT 1;
