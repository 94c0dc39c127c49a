-- Reserved for another branch's migration (0008); replaced by it at merge.
SELECT 1;
